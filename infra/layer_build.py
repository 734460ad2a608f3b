"""Build the `clm` Lambda layer's directory without Docker: pip's manylinux wheels plus the `clm` package.

The dependencies are installed once per content of requirements.txt (pip with `--platform manylinux2014_x86_64
--only-binary=:all: --python-version 3.11`, so the build machine's own Python and OS do not matter) into
`<cache>/layer-deps/<hash>/python`. The layer directory `<cache>/layer/<hash>` adds the `clm` package to
hard links of those files, and is rebuilt only when the requirements or the package's files change.

Everything is byte-compiled for Python 3.11 with unchecked-hash pycs: Lambda's /opt is read-only, so without
them every cold start compiles from source (measured 2-3x slower imports, ~3 s more for `kubernetes`), and
timestamp pycs would not match the zip's normalised dates.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements.txt"
PACKAGE = ROOT / "layers" / "clm" / "python" / "clm"
PIP_PLATFORM = (
    "--platform",
    "manylinux2014_x86_64",
    "--implementation",
    "cp",
    "--python-version",
    "3.11",  # LAMBDA_PYTHON
    "--only-binary=:all:",
)
LAMBDA_PYTHON = (3, 11)
KEEP_LAYERS = 5  # assembled layer directories kept in the cache (the newest)
_SKIPPED = ("__pycache__", "*.pyc")
_PYC_FORMAT = b"pyc: unchecked-hash, 3.11"  # part of the cache key: caches built without pycs are rebuilt


class LayerBuildError(RuntimeError):
    """The layer's dependencies could not be installed (e.g. a requirement without a manylinux wheel)."""


def cache_root() -> Path:
    """Where built layers are cached: ``$CLM_CACHE`` or ``~/.cache/clm``."""
    return Path(os.environ.get("CLM_CACHE") or Path.home() / ".cache" / "clm")


def build_layer(
    requirements: Path = REQUIREMENTS, package: Path = PACKAGE, cache: Path | None = None
) -> tuple[Path, str]:
    """The layer directory (holding `python/`) and its content hash; built only when missing."""
    cache = cache or cache_root()
    dependencies, dependencies_hash = build_dependencies(requirements, cache)
    digest = _hash(dependencies_hash.encode(), _tree_digest(package).encode())
    target = cache / "layer" / digest
    if not target.is_dir():

        def assemble(staging: Path) -> None:
            shutil.copytree(dependencies, staging, dirs_exist_ok=True, copy_function=_link_or_copy)
            shutil.copytree(package, staging / "python" / package.name, ignore=shutil.ignore_patterns(*_SKIPPED))
            _byte_compile(staging / "python" / package.name)

        _publish(target, assemble)
    _prune(target, KEEP_LAYERS)
    return target, digest


def build_dependencies(requirements: Path, cache: Path) -> tuple[Path, str]:
    """`<cache>/layer-deps/<hash>` with every requirement installed under `python/`, and the hash."""
    try:
        content = requirements.read_bytes()
    except OSError as exc:
        raise LayerBuildError(f"{requirements}: cannot read the layer's requirements ({exc.strerror})") from None
    digest = _hash(content, " ".join(PIP_PLATFORM).encode(), _PYC_FORMAT)
    target = cache / "layer-deps" / digest
    if not target.is_dir():

        def install(staging: Path) -> None:
            _pip_install(requirements, staging / "python")
            _byte_compile(staging / "python")

        _publish(target, install)
    return target, digest


def _byte_compile(directory: Path) -> None:
    """Unchecked-hash pycs for the Lambda runtime's Python (3.11); skipped by another build Python."""
    if sys.version_info[:2] != LAMBDA_PYTHON:
        return
    import compileall
    import py_compile

    compileall.compile_dir(
        directory, quiet=2, workers=0, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )


def _pip_install(requirements: Path, target: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--target",
        str(target),
        *PIP_PLATFORM,
        "-r",
        str(requirements),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")] or [result.stderr.strip()]
        raise LayerBuildError(f"{requirements}: pip could not install the layer's dependencies: {' '.join(errors)}")
    shutil.rmtree(target / "bin", ignore_errors=True)  # console scripts are of no use in a layer


def _publish(target: Path, fill: Callable[[Path], None]) -> None:
    """Fill a staging directory next to `target`, then rename it into place (atomic; a concurrent build wins)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".build-"))
    try:
        fill(staging)
        os.rename(staging, target)
    except OSError:
        if not target.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _prune(current: Path, keep: int) -> None:
    """Remove all but the `keep` most recently used layer directories; `current` is marked used and never removed."""
    os.utime(current)
    built = sorted(
        (path for path in current.parent.iterdir() if path.is_dir() and not path.name.startswith(".")),
        key=lambda path: path.stat().st_mtime,
        reverse=True,
    )
    for old in built[keep:]:
        if old != current:
            shutil.rmtree(old, ignore_errors=True)


def _tree_digest(root: Path) -> str:
    """SHA-256 over the relative paths and contents of the files under `root` (caches left out)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _hash(*parts: bytes) -> str:
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:32]


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:  # another file system
        shutil.copy2(source, destination)
