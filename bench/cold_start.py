"""Cold start of every Lambda handler: import time of lambdas/<function>/handler.py in a fresh interpreter.

    .venv/bin/python bench/cold_start.py [--runs 7] [--from-source]

Each run is `python -X importtime` in a new process with the function's folder and the `clm` layer on sys.path
and the environment Lambda gives the function (AWS_LAMBDA_FUNCTION_NAME set, so powertools' Tracer loads the X-Ray
SDK as it does in Lambda, plus infra.functions' POWERTOOLS_* variables). Two figures per handler:

- import: `import handler` (the init phase);
- cold: the same interpreter then imports every `clm` module the handler's code imports lazily (inside functions,
  found in the source), i.e. what the first invocations of a new container pay on top. The targets apply to it:
  400 ms, or 800 ms for a handler that talks to Kubernetes (it imports `clm.kube` or `kubernetes`).

The heaviest packages are the top-level packages with the most import time of their own (self time, summed).
`--from-source` runs without bytecode caches (PYTHONDONTWRITEBYTECODE and an empty PYTHONPYCACHEPREFIX): what a
layer without __pycache__ costs on Lambda's read-only /opt, where nothing compiled is ever kept.
Exits 1 when a handler misses its target. Runs take turns across handlers, so load spreads evenly.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAMBDAS = ROOT / "lambdas"
LAYER = ROOT / "layers" / "clm" / "python"
FUNCTIONS_MODULE = ROOT / "infra" / "functions.py"
TARGET_MS = {False: 400, True: 800}
MARKER = "-- lazy imports --"
CPU_PREFIX = "-- cpu seconds: "
HEAVIEST = 5
REGION = "eu-central-1"


@dataclass(frozen=True)
class ImportProfile:
    """One interpreter's imports: wall time of `import handler` and of the lazy imports after it, CPU time of both
    together, and self time per module."""

    import_us: int
    lazy_us: int
    cold_cpu_s: float
    self_us: dict[str, int]

    @property
    def cold_us(self) -> int:
        """Handler import plus the lazy imports."""
        return self.import_us + self.lazy_us


@dataclass(frozen=True)
class HandlerFigures:
    """The medians of one handler's runs and what its target is."""

    function: str
    kubernetes: bool
    import_ms: float
    cold_ms: float
    cold_cpu_ms: float
    heaviest: list[tuple[str, float]]

    @property
    def target_ms(self) -> int:
        """400 ms, 800 ms for a handler that talks to Kubernetes."""
        return TARGET_MS[self.kubernetes]

    @property
    def passed(self) -> bool:
        """Whether the cold figure is within the target."""
        return self.cold_ms <= self.target_ms


def parse_importtime(stderr: str) -> ImportProfile:
    """`-X importtime` output of a run that wrote MARKER between `import handler` and the lazy imports, then
    CPU_PREFIX and the CPU seconds of both.

    Only the top-level entries after the interpreter's own start-up count: `handler` (the import figure) and the
    top-level entries after the marker (the lazy figure).
    """
    self_us: Counter[str] = Counter()
    import_us = lazy_us = 0
    cpu_s = 0.0
    lazy = False
    for line in stderr.splitlines():
        if line == MARKER:
            lazy = True
            continue
        if line.startswith(CPU_PREFIX):
            cpu_s = float(line.removeprefix(CPU_PREFIX))
            continue
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|")
        module = name.strip()
        self_us[module] += int(own)
        if name.startswith("  "):  # nested: counted in its top-level entry's cumulative time
            continue
        if lazy:
            lazy_us += int(cumulative)
        elif module == "handler":
            import_us = int(cumulative)
    if not import_us:
        raise ValueError("no `handler` entry in the -X importtime output:\n" + stderr[-2000:])
    return ImportProfile(import_us, lazy_us, cpu_s, dict(self_us))


def module_file(module: str) -> Path | None:
    """The source file of a `clm` module in the layer, None for other modules."""
    if module != "clm" and not module.startswith("clm."):
        return None
    base = LAYER.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imports_of(module: str) -> set[str]:
    """Modules a `clm` module's source imports anywhere (module level or inside functions), not type-only ones."""
    path = module_file(module)
    if path is None:
        return set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if module_file(f"{base}.{alias.name}"))
    return found


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of the tree except those under `if TYPE_CHECKING:`."""
    nodes, pending = [], [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
            continue
        nodes.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return nodes


def lazy_imports(imported: set[str]) -> list[str]:
    """Modules the imported `clm` modules' sources import (anywhere, transitively through `clm`) that the import
    itself did not load: `clm` modules and the third-party modules they import inside functions."""
    reached, pending = set(imported), [module for module in imported if module_file(module)]
    while pending:
        for module in imports_of(pending.pop()):
            if module not in reached:
                reached.add(module)
                if module_file(module):
                    pending.append(module)
    return sorted(reached - imported)


def lambda_environment(function: str, bytecode_prefix: str | None) -> dict[str, str]:
    """The variables Lambda sets for a Python 3.11 function, plus the POWERTOOLS_* ones of infra.functions."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join([str(LAMBDAS / function), str(LAYER)]),
        "LAMBDA_TASK_ROOT": str(LAMBDAS / function),
        "AWS_LAMBDA_FUNCTION_NAME": f"clm-{function}",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
        "_HANDLER": "handler.handler",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        **_powertools_environment(),
    }
    if bytecode_prefix:
        environment |= {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": bytecode_prefix}
    return environment


def _powertools_environment() -> dict[str, str]:
    """POWERTOOLS_ENVIRONMENT as infra/functions.py defines it (read from the source: the CDK import is slow)."""
    tree = ast.parse(FUNCTIONS_MODULE.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "POWERTOOLS_ENVIRONMENT" for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{FUNCTIONS_MODULE}: POWERTOOLS_ENVIRONMENT not found")


def run_once(function: str, lazy: list[str], bytecode_prefix: str | None) -> ImportProfile:
    """One fresh interpreter importing the handler, then the lazy modules."""
    code = "\n".join(
        [
            "import sys, time",
            "start = time.process_time()",
            "import handler",
            f"sys.stderr.write({MARKER!r} + '\\n')",
            *(f"import {module}" for module in lazy),
            f"sys.stderr.write({CPU_PREFIX!r} + str(time.process_time() - start) + '\\n')",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env=lambda_environment(function, bytecode_prefix),
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode:
        raise RuntimeError(f"lambdas/{function}/handler.py: import failed:\n{result.stderr[-3000:]}")
    return parse_importtime(result.stderr)


def figures(function: str, profiles: list[ImportProfile]) -> HandlerFigures:
    """Medians over the runs; heaviest top-level packages by summed self time."""
    packages: list[Counter[str]] = []
    for profile in profiles:
        per_package: Counter[str] = Counter()
        for module, own in profile.self_us.items():
            per_package[module.split(".")[0]] += own
        packages.append(per_package)
    names = set().union(*packages)
    heaviest = sorted(
        ((name, statistics.median(p[name] for p in packages) / 1000) for name in names), key=lambda item: -item[1]
    )[:HEAVIEST]
    modules = set(profiles[0].self_us)
    return HandlerFigures(
        function=function,
        kubernetes=any(m == "kubernetes" or m.startswith(("kubernetes.", "clm.kube")) for m in modules),
        import_ms=statistics.median(p.import_us for p in profiles) / 1000,
        cold_ms=statistics.median(p.cold_us for p in profiles) / 1000,
        cold_cpu_ms=statistics.median(p.cold_cpu_s for p in profiles) * 1000,
        heaviest=heaviest,
    )


def measure(functions: list[str], runs: int, from_source: bool) -> list[HandlerFigures]:
    """Profile every handler `runs` times, taking turns; a first run per handler warms the bytecode caches."""
    with tempfile.TemporaryDirectory(prefix="clm-no-bytecode-") as empty:
        prefix = empty if from_source else None
        first = {function: run_once(function, [], prefix) for function in functions}
        lazy = {function: lazy_imports(set(first[function].self_us)) for function in functions}
        profiles: dict[str, list[ImportProfile]] = {function: [] for function in functions}
        for _ in range(runs):
            for function in functions:
                profiles[function].append(run_once(function, lazy[function], prefix))
    return [figures(function, profiles[function]) for function in functions]


def print_table(results: list[HandlerFigures], runs: int, from_source: bool) -> None:
    """The table of figures, one handler a row."""
    print(f"handler import times, median of {runs} runs ({'from source, no bytecode' if from_source else 'bytecode'})")
    print(
        f"{'handler':<16} {'kubernetes':<10} {'import ms':>9} {'cold ms':>8} {'cold cpu ms':>11} {'target':>6}  "
        f"{'':4}  heaviest packages (self ms)"
    )
    for r in results:
        heaviest = ", ".join(f"{name} {ms:.0f}" for name, ms in r.heaviest)
        print(
            f"{r.function:<16} {'yes' if r.kubernetes else 'no':<10} {r.import_ms:9.0f} {r.cold_ms:8.0f} "
            f"{r.cold_cpu_ms:11.0f} {r.target_ms:6d}  {'pass' if r.passed else 'FAIL':4}  {heaviest}"
        )


def main() -> None:
    """Measure every handler under lambdas/ and print the table; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--from-source", action="store_true", help="no bytecode caches (a layer without .pyc)")
    args = parser.parse_args()
    functions = sorted(path.parent.name for path in LAMBDAS.glob("*/handler.py"))
    load_before = os.getloadavg()[0]
    results = measure(functions, args.runs, args.from_source)
    print_table(results, args.runs, args.from_source)
    load = max(load_before, os.getloadavg()[0])
    print(
        f"load average (1 min) up to {load:.1f} on {os.cpu_count()} cores"
        + (": wall times are inflated, the CPU times less so" if load > (os.cpu_count() or 1) else "")
    )
    missed = [r.function for r in results if not r.passed]
    if missed:
        print(f"target missed: {', '.join(missed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
