"""Build configuration sources from CLM_CONFIG_SOURCE: comma-separated `[name=]uri`, where uri is a local path,
s3://bucket/prefix or codecommit://repository@branch.

Several sources are combined (clm.config.combined); like CLM's `--config-source name:type:location`, each has a
name (default: `main` for the first, `source<N>` for the N-th), which the combined version and the config item
`override_channel` use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from clm.config.codecommit import CodeCommitSource
from clm.config.combined import SOURCE_NAME, CombinedSource
from clm.config.local import LocalSource
from clm.config.s3 import S3Source
from clm.config.tree import ConfigSource
from clm.errors import ConfigSourceError

MAIN = "main"


def parse_sources(uri: str) -> list[tuple[str, str]]:
    """`(name, uri)` per comma-separated part of `uri`, names checked and unique."""
    parts = [part.strip() for part in uri.split(",") if part.strip()]
    if not parts:
        raise ConfigSourceError("no configuration source given")
    named = []
    for index, part in enumerate(parts, start=1):
        name, sep, rest = part.partition("=")
        if sep and SOURCE_NAME.fullmatch(name) and "://" not in name:
            named.append((name, rest.strip()))
        else:
            named.append((MAIN if index == 1 else f"source{index}", part))
    names = [name for name, _ in named]
    duplicate = next((name for name in names if names.count(name) > 1), None)
    if duplicate:
        raise ConfigSourceError(f"duplicate config source name: {duplicate}")
    return named


def source_from_uri(
    uri: str, client: Callable[[str], Any], channel: str = "", overrides: Mapping[str, str] | None = None
) -> ConfigSource:
    """The source(s) of `uri` on `channel` ("" = the default), a source named in `overrides` on its channel there
    (CLM's combined.go Version; a single source ignores overrides, as git.go's). `client(service)` gives boto3
    clients."""
    sources = parse_sources(uri)
    if len(sources) == 1:
        return one_source(sources[0][1], client, channel)
    overrides = overrides or {}
    return CombinedSource([(name, one_source(part, client, overrides.get(name, channel))) for name, part in sources])


def one_source(uri: str, client: Callable[[str], Any], channel: str = "") -> ConfigSource:
    """One source on `channel`: an S3 prefix per channel, a CodeCommit branch per channel (the URI's branch is
    the default), a local directory whatever the channel (as CLM's directory source)."""
    if uri.startswith("s3://"):
        bucket, _, prefix = uri[len("s3://") :].partition("/")
        if not bucket:
            raise ConfigSourceError(f"{uri}: expected s3://bucket/prefix")
        return S3Source(client("s3"), bucket, prefix, channel)
    if uri.startswith("codecommit://"):
        repository, sep, branch = uri[len("codecommit://") :].partition("@")
        if not repository or not sep or not branch:
            raise ConfigSourceError(f"{uri}: expected codecommit://repository@branch")
        return CodeCommitSource(client("codecommit"), repository, channel or branch)
    return LocalSource(uri)
