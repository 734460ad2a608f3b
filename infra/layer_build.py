"""Build the `clm` Lambda layer's directory without Docker: pip's manylinux wheels plus the `clm` package.

The dependencies are installed once per content of the lock file, requirements-layer.lock (infra.layer_lock: every
distribution pinned with its wheel's sha256; pip with `--require-hashes --no-deps`, `--platform
manylinux2014_x86_64 --only-binary=:all: --python-version` of the Lambda runtime, LAMBDA_PYTHON, so the build
machine's own Python and OS do not matter: a requirement without a wheel for it, without a hash or with another
hash fails the build) into `<cache>/layer-deps/<hash>/python`. The layer directory `<cache>/layer/<hash>` adds the
`clm` package to hard links of those files, and is rebuilt only when the lock or the package's files change.

The layer holds only what the functions import: not the package's CLI (`clm/cli`, which needs click and rich) nor
its Go-template translator (`clm/migrate`), not `kubernetes/aio` (the asyncio client; its aiohttp is left out of
the lock), nor console scripts.

Everything is byte-compiled for the runtime's Python with unchecked-hash pycs: Lambda's /opt is read-only, so
without them every cold start compiles from source (measured 2-3x slower imports, ~3 s more for `kubernetes`), and
timestamp pycs would not match the zip's normalised dates. Only an interpreter of that version writes its pycs:
the build Python, `$CLM_LAMBDA_PYTHON`, `pythonX.Y` on PATH or pyenv's; without one the layer has no pycs (a
warning says so, and the cache key tells such layers apart).
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

from infra.zips import zip_directory

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements.txt"  # what the layer needs; the lock pins it (infra.layer_lock)
LOCK = ROOT / "requirements-layer.lock"
PACKAGE = ROOT / "layers" / "clm" / "python" / "clm"
LAMBDA_PYTHON = (3, 13)  # the functions' runtime: infra.layer.RUNTIME
LAMBDA_VERSION = ".".join(map(str, LAMBDA_PYTHON))
PIP_PLATFORM = (
    "--platform",
    "manylinux2014_x86_64",
    "--implementation",
    "cp",
    "--python-version",
    LAMBDA_VERSION,
    "--only-binary=:all:",
)
KEEP_LAYERS = 5  # assembled layer directories kept in the cache (the newest)
_SKIPPED = ("__pycache__", "*.pyc")
PACKAGE_LEFT_OUT = ("cli", "migrate")  # the `clm` command and its Go-template translator: no function imports them
DEPENDENCIES_LEFT_OUT = ("kubernetes/aio", "bin")  # the asyncio client (needs aiohttp); console scripts
_PYC_FORMAT = f"pyc: unchecked-hash, {LAMBDA_VERSION}".encode()  # part of the cache key
_NO_PYC = b"no pyc"


class LayerBuildError(RuntimeError):
    """The layer's dependencies could not be installed (e.g. a requirement without a manylinux wheel)."""


def cache_root() -> Path:
    """Where built layers are cached: ``$CLM_CACHE`` or ``~/.cache/clm``."""
    return Path(os.environ.get("CLM_CACHE") or Path.home() / ".cache" / "clm")


def build_layer(lock: Path = LOCK, package: Path = PACKAGE, cache: Path | None = None) -> tuple[Path, str]:
    """The layer directory (holding `python/`) and its content hash; built only when missing."""
    cache = cache or cache_root()
    dependencies, dependencies_hash = build_dependencies(lock, cache)
    digest = _hash(dependencies_hash.encode(), _tree_digest(package).encode())
    target = cache / "layer" / digest
    if not target.is_dir():

        def assemble(staging: Path) -> None:
            shutil.copytree(dependencies, staging, dirs_exist_ok=True, copy_function=_link_or_copy)
            shutil.copytree(package, staging / "python" / package.name, ignore=_package_ignore(package))
            _byte_compile(staging / "python" / package.name)

        _publish(target, assemble)
    _prune(target, KEEP_LAYERS)
    return target, digest


def build_layer_zip(lock: Path = LOCK, package: Path = PACKAGE, cache: Path | None = None) -> tuple[Path, str]:
    """The layer as the zip Lambda takes (`python/` at its root, pycs kept), cached beside its directory, and the
    layer's content hash: deployments upload it as it is instead of zipping ~130 MB each time."""
    directory, digest = build_layer(lock, package, cache)
    return zip_directory(directory, directory.with_suffix(".zip"), keep_pyc=True), digest


def build_dependencies(lock: Path, cache: Path) -> tuple[Path, str]:
    """`<cache>/layer-deps/<hash>` with every locked distribution installed under `python/`, and the hash."""
    try:
        content = lock.read_bytes()
    except OSError as exc:
        raise LayerBuildError(f"{lock}: cannot read the layer's lock file ({exc.strerror})") from None
    left_out = " ".join(DEPENDENCIES_LEFT_OUT).encode()
    digest = _hash(content, " ".join(PIP_PLATFORM).encode(), left_out, _PYC_FORMAT if lambda_python() else _NO_PYC)
    target = cache / "layer-deps" / digest
    if not target.is_dir():

        def install(staging: Path) -> None:
            _pip_install(lock, staging / "python")
            _byte_compile(staging / "python")

        _publish(target, install)
    return target, digest


@cache
def lambda_python() -> str | None:
    """An interpreter of the Lambda runtime's Python version, or None (with a warning) when there is none."""
    name = f"python{LAMBDA_VERSION}"
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates = [
        sys.executable,
        os.environ.get("CLM_LAMBDA_PYTHON", ""),
        shutil.which(name) or "",
        *sorted(glob.glob(str(pyenv / f"{LAMBDA_VERSION}.*" / "bin" / name)), reverse=True),
    ]
    probe = "import sys; print('%d.%d' % sys.version_info[:2])"
    for candidate in filter(None, candidates):
        result = subprocess.run([candidate, "-c", probe], capture_output=True, text=True, check=False)
        if result.returncode == 0 and result.stdout.strip() == LAMBDA_VERSION:
            return candidate
    print(f"clm layer: no {name} found to byte-compile it: cold starts compile from source", file=sys.stderr)
    return None


def _byte_compile(directory: Path) -> None:
    """Unchecked-hash pycs for the Lambda runtime's Python, written by an interpreter of that version."""
    python = lambda_python()
    if python is None:
        return
    command = [python, "-m", "compileall", "-qq", "-j", "0", "--invalidation-mode", "unchecked-hash", str(directory)]
    subprocess.run(command, capture_output=True, check=False)  # a file only another Python parses stays source


def _pip_install(lock: Path, target: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--require-hashes",
        "--no-deps",  # the lock holds every distribution (and leaves some out on purpose)
        "--target",
        str(target),
        *PIP_PLATFORM,
        "-r",
        str(lock),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")] or [result.stderr.strip()]
        raise LayerBuildError(f"{lock}: pip could not install the layer's dependencies: {' '.join(errors)}")
    for left_out in DEPENDENCIES_LEFT_OUT:
        shutil.rmtree(target / left_out, ignore_errors=True)


def _package_ignore(package: Path) -> Callable[[str, list[str]], set[str]]:
    """copytree's ignore: caches everywhere, PACKAGE_LEFT_OUT at the package's top."""
    caches = shutil.ignore_patterns(*_SKIPPED)

    def ignore(directory: str, names: list[str]) -> set[str]:
        top = set(PACKAGE_LEFT_OUT) & set(names) if Path(directory) == package else set()
        return set(caches(directory, names)) | top

    return ignore


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
            old.with_suffix(".zip").unlink(missing_ok=True)


def _tree_digest(root: Path) -> str:
    """SHA-256 over the relative paths and contents of the files under `root` (caches and what the layer leaves
    out of the package excluded)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).parts
        if relative[0] in PACKAGE_LEFT_OUT:
            continue
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
