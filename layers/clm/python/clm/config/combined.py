"""Several configuration sources layered: later sources override earlier ones at the same path."""

from __future__ import annotations

from collections.abc import Sequence

from clm.config.tree import ConfigSource, ConfigTree


class CombinedSource:
    """Sources merged in order; the version joins theirs with "+"."""

    def __init__(self, sources: Sequence[ConfigSource]):
        if not sources:
            raise ValueError("CombinedSource needs at least one source")
        self.sources = list(sources)

    def describe(self) -> str:
        return " + ".join(source.describe() for source in self.sources)

    def version(self) -> str:
        return "+".join(source.version() for source in self.sources)

    def fetch(self) -> ConfigTree:
        trees = [source.fetch() for source in self.sources]
        files: dict[str, bytes] = {}
        for tree in trees:
            files.update(tree.files)
        return ConfigTree(version="+".join(tree.version for tree in trees), files=files, source=self.describe())
