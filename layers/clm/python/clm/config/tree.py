"""A configuration repository snapshot (`ConfigTree`) and the `ConfigSource` protocol."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from clm.errors import ConfigSourceError

_VERSION = re.compile(r"[A-Za-z0-9._+=;-]+")  # "=" and ";": a combined version, `name=version;...` as CLM


@dataclass(frozen=True)
class ConfigTree:
    """A snapshot of a configuration repository at one version.

    A combined snapshot (clm.config.combined) keeps each source's snapshot in `layers`, first the main one,
    whose files are also `files`.
    """

    version: str
    files: Mapping[str, bytes]
    source: str
    layers: tuple[Layer, ...] = ()

    def __post_init__(self) -> None:
        if not _VERSION.fullmatch(self.version):
            raise ValueError(f"config version {self.version!r} of {self.source} is not [A-Za-z0-9._+=;-]+")

    def parts(self) -> tuple[Layer, ...]:
        """The sources to read, in order: the layers of a combined snapshot, else this one (unnamed)."""
        return self.layers or (Layer("", self),)

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


@dataclass(frozen=True)
class Layer:
    """One named source's snapshot inside a combined one."""

    name: str
    tree: ConfigTree


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
