"""`clm render --out`: renderings written as files under OUT/<local id>/, never outside their cluster's folder.

Every file's path is resolved (`..` and symbolic links followed) and checked before anything is written; one file
that would land elsewhere, or two clusters sharing a folder, stops the command with nothing written.
"""

from __future__ import annotations

from pathlib import Path

from clm.errors import ClmError


class OutsideFolder(ClmError):
    """A rendered file would be written outside its cluster's folder under --out."""

    asl_name = "OutsideFolder"


class OutFolder:
    """The files to write under one --out folder, each checked when added; written by :meth:`write` only."""

    def __init__(self, out: Path) -> None:
        self.root = out.resolve()
        self._writes: list[tuple[Path, str]] = []
        self._owners: dict[Path, str] = {}  # cluster folder -> the cluster writing it

    def add(self, cluster_id: str, local_id: str, files: dict[str, str]) -> None:
        """Plan `files` (relative path -> content) under OUT/<local id>/; OutsideFolder names the cluster, the file
        and where it would land when one resolves outside that folder, or the cluster already writing there."""
        folder = (self.root / local_id).resolve()
        if folder.parent != self.root:
            raise OutsideFolder(f"cluster {cluster_id}: local_id {local_id!r} is not a folder of {self.root}")
        if folder in self._owners:
            raise OutsideFolder(
                f"clusters {self._owners[folder]} and {cluster_id} both have local_id {local_id!r}, so both would "
                f"write {folder}: render them to different --out folders"
            )
        planned = []
        for relative, content in files.items():
            target = (folder / relative).resolve()
            if not target.is_relative_to(folder) or target == folder:
                raise OutsideFolder(
                    f"cluster {cluster_id}: {relative}: would be written to {target}, outside {folder} (a `..` or "
                    "a symbolic link on its way); nothing written"
                )
            planned.append((target, content))
        self._owners[folder] = cluster_id
        self._writes += planned

    def write(self) -> None:
        """Write every planned file, making its folders."""
        for target, content in self._writes:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
