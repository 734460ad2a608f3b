"""Build a configuration source from a URI: a local path, s3://bucket/prefix or codecommit://repo@branch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clm.config.codecommit import CodeCommitSource
from clm.config.combined import CombinedSource
from clm.config.local import LocalSource
from clm.config.s3 import S3Source
from clm.config.tree import ConfigSource
from clm.errors import ConfigSourceError


def source_from_uri(uri: str, client: Callable[[str], Any]) -> ConfigSource:
    """One source per comma-separated URI (later ones override earlier ones); `client(service)` gives boto3 clients."""
    parts = [part.strip() for part in uri.split(",") if part.strip()]
    if not parts:
        raise ConfigSourceError("no configuration source given")
    sources = [_one(part, client) for part in parts]
    return sources[0] if len(sources) == 1 else CombinedSource(sources)


def _one(uri: str, client: Callable[[str], Any]) -> ConfigSource:
    if uri.startswith("s3://"):
        bucket, _, prefix = uri[len("s3://") :].partition("/")
        if not bucket:
            raise ConfigSourceError(f"{uri}: expected s3://bucket/prefix")
        return S3Source(client("s3"), bucket, prefix)
    if uri.startswith("codecommit://"):
        repository, sep, branch = uri[len("codecommit://") :].partition("@")
        if not repository or not sep or not branch:
            raise ConfigSourceError(f"{uri}: expected codecommit://repository@branch")
        return CodeCommitSource(client("codecommit"), repository, branch)
    return LocalSource(uri)
