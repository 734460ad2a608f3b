"""Several named configuration sources combined as Zalando CLM's channel/combined.go does.

The first source is the main one: the cluster stack, etcd and node-pool profiles come from it alone.
config-defaults.yaml of every source is merged key by key (later wins), deletions.yaml lists are
concatenated and the manifest components of every source are applied (each named `<source>/<component>`);
clm.render.renderer reads the snapshot's `layers` that way. The version names every source's version:
`main=<version>;<name>=<version>...` (combinedVersion.ID in combined.go).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clm.config.tree import ConfigSource, ConfigTree, Layer
from clm.errors import ConfigSourceError

SOURCE_NAME = re.compile(r"[A-Za-z0-9._-]+")


class CombinedSource:
    """Named sources in order, the first the main one; names are unique (NewCombinedSource refuses duplicates)."""

    def __init__(self, sources: Sequence[tuple[str, ConfigSource]]):
        if not sources:
            raise ValueError("CombinedSource needs at least one source")
        names = [name for name, _ in sources]
        for name in names:
            if not SOURCE_NAME.fullmatch(name):
                raise ConfigSourceError(f"config source name {name!r} is not [A-Za-z0-9._-]+")
            if names.count(name) > 1:
                raise ConfigSourceError(f"duplicate config source name: {name}")
        self.sources = list(sources)

    def describe(self) -> str:
        return ", ".join(f"{name}={source.describe()}" for name, source in self.sources)

    def version(self) -> str:
        return ";".join(f"{name}={source.version()}" for name, source in self.sources)

    def fetch(self) -> ConfigTree:
        layers = tuple(Layer(name, source.fetch()) for name, source in self.sources)
        version = ";".join(f"{layer.name}={layer.tree.version}" for layer in layers)
        return ConfigTree(version=version, files=layers[0].tree.files, source=self.describe(), layers=layers)
