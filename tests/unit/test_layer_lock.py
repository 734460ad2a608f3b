"""The layer is built from a lock with hashes (infra.layer_lock) and holds only what the functions import.

- the lock pins requirements.txt's versions, every entry with one sha256; the built layer's distributions are
  exactly the lock's;
- a lock entry without a hash, or with another wheel's hash, fails the build (pip's --require-hashes);
- every handler, every module of the `clm` package in the layer, and every module they import (at the top or inside
  a function) imports in a Python of the Lambda runtime's version with only the layer and the function's folder on
  sys.path (no site-packages): nothing needs the CLI, aiohttp or kubernetes.aio, which the layer leaves out.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from infra.layer_build import LOCK, PACKAGE_LEFT_OUT, REQUIREMENTS, LayerBuildError, build_dependencies, build_layer
from infra.layer_build import lambda_python as runtime_python
from infra.layer_lock import LEFT_OUT, canonical, pinned

ROOT = Path(__file__).resolve().parents[2]
LAMBDAS = ROOT / "lambdas"
SIX = re.compile(r"six==\S+ \\\n\s+--hash=sha256:[0-9a-f]{64}\n")


@pytest.fixture(scope="module")
def layer() -> Path:
    """The layer's `python/` directory (cached: the synthesis of test_infra builds the same)."""
    return build_layer()[0] / "python"


def test_the_lock_pins_the_requirements_each_with_one_hash():
    text = LOCK.read_text()
    locked = pinned(text)
    wanted = {name: version for name, version in pinned(REQUIREMENTS.read_text()).items() if name not in LEFT_OUT}
    assert {name: locked.get(name) for name in wanted} == wanted, "run `python -m infra.layer_lock`"
    entries = re.findall(r"^([a-z0-9][\w.-]*)==\S+ \\\n\s+--hash=sha256:([0-9a-f]{64})$", text, re.MULTILINE)
    assert sorted(name for name, _ in entries) == sorted(locked)
    assert not set(locked) & {canonical(name) for name in LEFT_OUT}


def test_the_layer_holds_exactly_the_locked_distributions(layer):
    names = [path.name.removesuffix(".dist-info").rsplit("-", 1) for path in layer.glob("*.dist-info")]
    installed = {canonical(name): version for name, version in names}
    assert installed == pinned(LOCK.read_text())
    assert not (layer / "kubernetes" / "aio").exists() and not (layer / "bin").exists()
    assert not any((layer / "clm" / name).exists() for name in PACKAGE_LEFT_OUT)


def test_a_dependency_without_hash_fails_the_build(tmp_path):
    [entry] = SIX.findall(LOCK.read_text())
    lock = tmp_path / "requirements-layer.lock"
    lock.write_text(entry.split(" \\")[0] + "\n")
    with pytest.raises(LayerBuildError, match=r"requirements-layer.lock: pip could not install.*[Hh]ashes"):
        build_dependencies(lock, tmp_path / "cache")


def test_a_wheel_with_another_hash_fails_the_build(tmp_path):
    [entry] = SIX.findall(LOCK.read_text())
    lock = tmp_path / "requirements-layer.lock"
    lock.write_text(re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "0" * 64, entry))
    with pytest.raises(LayerBuildError, match="DO NOT MATCH THE HASHES"):
        build_dependencies(lock, tmp_path / "cache")


def imported_modules(files: list[Path]) -> set[str]:
    """Every absolute module the files import, at the top or inside functions."""
    found = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    return found


def test_every_handler_and_what_it_imports_runs_from_the_layer_alone(layer):
    python = runtime_python()
    assert python is not None
    package = sorted((layer / "clm").rglob("*.py"))
    modules = sorted(
        {".".join(path.relative_to(layer).with_suffix("").parts).removesuffix(".__init__") for path in package}
        | imported_modules([*package, *LAMBDAS.glob("*/handler.py")])
    )
    for handler in sorted(LAMBDAS.glob("*/handler.py")):
        script = (
            "import importlib, importlib.util, sys\n"
            f"sys.path[:0] = [{str(layer)!r}, {str(handler.parent)!r}]\n"
            "import handler\n"
            "assert callable(handler.handler)\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "left_out = [m for m in ('aiohttp', 'click', 'rich') if importlib.util.find_spec(m)]\n"
            "assert not left_out, left_out\n"
        )
        result = subprocess.run([python, "-I", "-S", "-c", script], capture_output=True, text=True, check=False)
        assert result.returncode == 0, f"{handler.parent.name}: {result.stderr[-2000:]}"
