"""A configuration repository snapshot (`ConfigTree`) and the `ConfigSource` protocol."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from clm.errors import ConfigSourceError

_VERSION = re.compile(r"[A-Za-z0-9._+-]+")


@dataclass(frozen=True)
class ConfigTree:
    """A snapshot of a configuration repository at one version."""

    version: str
    files: Mapping[str, bytes]
    source: str

    def __post_init__(self) -> None:
        if not _VERSION.fullmatch(self.version):
            raise ValueError(f"config version {self.version!r} of {self.source} is not [A-Za-z0-9._+-]+")

    def read(self, path: str) -> bytes:
        """The content of `path`; ConfigSourceError naming path and source when it is missing."""
        try:
            return self.files[path]
        except KeyError:
            raise ConfigSourceError(f"{path} not found in {self.source} at version {self.version}") from None

    def exists(self, path: str) -> bool:
        """Whether `path` is a file of the tree."""
        return path in self.files

    def list(self, prefix: str) -> list[str]:
        """Sorted paths of the files under the folder `prefix` (a trailing "/" is optional)."""
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        return sorted(path for path in self.files if path.startswith(prefix))


class ConfigSource(Protocol):
    """Where a configuration repository lives."""

    def describe(self) -> str:
        """A human description, e.g. "s3://bucket/prefix"."""
        ...

    def version(self) -> str:
        """The current version, without reading contents where possible."""
        ...

    def fetch(self) -> ConfigTree:
        """A consistent snapshot whose version identifies exactly its contents."""
        ...


def digest(entries: Iterable[tuple[str, bytes | str]]) -> str:
    """First 12 hex chars of a SHA-256 over (path, identity) pairs, order-independent and unambiguous."""
    sha = hashlib.sha256()
    for path, identity in sorted((path, _bytes(value)) for path, value in entries):
        for part in (path.encode(), identity):
            sha.update(len(part).to_bytes(8, "big"))
            sha.update(part)
    return sha.hexdigest()[:12]


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()
