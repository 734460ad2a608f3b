"""Deterministic zips of a directory: sorted entries, no build times, caches and compiled files left out, so equal
content gives an equal zip (and an equal asset hash)."""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_SKIPPED_DIRS = {"__pycache__"}


def zip_directory(source: Path, target: Path, *, keep_pyc: bool = False) -> Path:
    """Write the zip of `source` to `target` (atomically) unless it is there; returns `target`. Compiled files are
    left out unless `keep_pyc` (a layer's pycs are built for its runtime, not caches)."""
    if target.is_file():
        return target
    if not source.is_dir():
        raise FileNotFoundError(f"{source} is not a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(dir=target.parent, prefix=".zip-")
    os.close(handle)
    try:
        with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            for path in _files(source, keep_pyc):
                info = zipfile.ZipInfo(path.relative_to(source).as_posix(), _FIXED_TIME)
                info.external_attr = (path.stat().st_mode & 0o777 | 0o100000) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                with path.open("rb") as data, archive.open(info, "w") as entry:
                    shutil.copyfileobj(data, entry, 1 << 20)
        os.replace(staging, target)
    finally:
        Path(staging).unlink(missing_ok=True)
    return target


def _files(root: Path, keep_pyc: bool) -> list[Path]:
    found: list[Path] = []
    for directory, subdirectories, names in os.walk(root):
        skipped = set() if keep_pyc else _SKIPPED_DIRS
        subdirectories[:] = sorted(name for name in subdirectories if name not in skipped)
        found += [Path(directory) / name for name in sorted(names) if keep_pyc or not name.endswith(".pyc")]
    return found
