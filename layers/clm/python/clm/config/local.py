"""A configuration repository in a local directory (dotfiles and dot-directories such as .git ignored)."""

from __future__ import annotations

import os
from pathlib import Path

from clm.config.tree import ConfigTree, digest
from clm.errors import ConfigSourceError


class LocalSource:
    """A directory; its version hashes every file's path and content."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path).resolve()

    def describe(self) -> str:
        return str(self.path)

    def version(self) -> str:
        return self.fetch().version

    def fetch(self) -> ConfigTree:
        files = self._read_all()
        return ConfigTree(version=digest(files.items()), files=files, source=self.describe())

    def _read_all(self) -> dict[str, bytes]:
        if not self.path.is_dir():
            raise ConfigSourceError(f"{self.path}: not a directory")
        files: dict[str, bytes] = {}
        try:
            for folder, dirs, names in os.walk(self.path, onerror=_raise):
                dirs[:] = [name for name in dirs if not name.startswith(".")]
                for name in names:
                    if not name.startswith("."):
                        file = Path(folder, name)
                        files[file.relative_to(self.path).as_posix()] = file.read_bytes()
        except OSError as exc:
            raise ConfigSourceError(f"{self.path}: {exc}") from None
        return files


def _raise(error: OSError) -> None:
    raise error
