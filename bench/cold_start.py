"""Cold start of every Lambda handler: import time of lambdas/<function>/handler.py in a fresh interpreter.

    .venv/bin/python bench/cold_start.py [--runs 7] [--from-source]

Each run is `python -X importtime` in a new process with the function's folder and the `clm` layer on sys.path
and the environment Lambda gives the function (AWS_LAMBDA_FUNCTION_NAME set, so powertools' Tracer loads the X-Ray
SDK as it does in Lambda; fake credentials, as Lambda's are in the environment too; infra.functions' POWERTOOLS_*
variables). Per handler, medians of the runs:

- import ms: `import handler` (Lambda's init phase), the figure the target applies to: 400 ms, or 800 ms for a
  handler that talks to Kubernetes (its code imports `clm.kube` or `kubernetes`, at once or inside functions);
- cpu ms: the CPU time of that import (less sensitive than wall time to other load on the machine);
- lazy ms: the same interpreter then imports every module the handler's `clm` code imports inside functions (found
  in the source, transitively): an upper bound of what its first invocations add to the cold start.

Heaviest packages: top-level packages by import time of their own (self time, summed), for the import and for the
lazy imports. `--from-source` compiles every module outside the standard library from source and keeps no bytecode
(as a layer without __pycache__ does on Lambda's read-only /opt; the runtime's standard library has its bytecode).
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
# Child prologue for --from-source: bytecode of modules outside the standard library is never found nor written.
NO_BYTECODE_OUTSIDE_STDLIB = [
    "import sys, sysconfig, importlib._bootstrap_external as _external",
    "sys.dont_write_bytecode = True",
    "_stdlib, _cache = sysconfig.get_paths()['stdlib'], _external.cache_from_source",
    "_external.cache_from_source = lambda path, *args, **kwargs: (",
    "    _cache(path, *args, **kwargs) if path.startswith(_stdlib) else path + '.no-bytecode')",
]


@dataclass(frozen=True)
class ImportProfile:
    """One interpreter's imports: wall and CPU time of `import handler`, wall time of the lazy imports after it, and
    the self time of each module, for the import and for the lazy imports."""

    import_us: int
    import_cpu_s: float
    lazy_us: int
    import_self_us: dict[str, int]
    lazy_self_us: dict[str, int]


@dataclass(frozen=True)
class HandlerFigures:
    """The medians of one handler's runs and what its target is."""

    function: str
    kubernetes: bool
    import_ms: float
    import_cpu_ms: float
    lazy_ms: float
    heaviest: list[tuple[str, float]]
    heaviest_lazy: list[tuple[str, float]]

    @property
    def target_ms(self) -> int:
        """400 ms, 800 ms for a handler that talks to Kubernetes."""
        return TARGET_MS[self.kubernetes]

    @property
    def passed(self) -> bool:
        """Whether the handler import is within the target."""
        return self.import_ms <= self.target_ms


def parse_importtime(stderr: str) -> ImportProfile:
    """`-X importtime` output of a run that wrote CPU_PREFIX and the import's CPU seconds, then MARKER, between
    `import handler` and the lazy imports.

    Only the top-level entries after the interpreter's own start-up count: `handler` (the import figure) and the
    top-level entries after the marker (the lazy figure).
    """
    own_time: tuple[Counter[str], Counter[str]] = (Counter(), Counter())
    import_us = lazy_us = 0
    cpu_s = 0.0
    lazy = False
    for line in stderr.splitlines():
        if line == MARKER:
            lazy = True
        elif line.startswith(CPU_PREFIX):
            cpu_s = float(line.removeprefix(CPU_PREFIX))
        elif line.startswith("import time:") and "self [us]" not in line:
            own, cumulative, name = line.removeprefix("import time:").split("|")
            own_time[lazy][name.strip()] += int(own)
            if name.startswith("  "):  # nested: counted in its top-level entry's cumulative time
                continue
            if lazy:
                lazy_us += int(cumulative)
            elif name.strip() == "handler":
                import_us = int(cumulative)
    if not import_us:
        raise ValueError("no `handler` entry in the -X importtime output:\n" + stderr[-2000:])
    return ImportProfile(import_us, cpu_s, lazy_us, dict(own_time[False]), dict(own_time[True]))


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


def lambda_environment(function: str) -> dict[str, str]:
    """The variables Lambda sets for a Python 3.13 function, plus the POWERTOOLS_* ones of infra.functions."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join([str(LAMBDAS / function), str(LAYER)]),
        "LAMBDA_TASK_ROOT": str(LAMBDAS / function),
        "AWS_LAMBDA_FUNCTION_NAME": f"clm-{function}",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",  # infra.layer.RUNTIME
        "_HANDLER": "handler.handler",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        **_powertools_environment(),
    }
    return environment


def _powertools_environment() -> dict[str, str]:
    """POWERTOOLS_ENVIRONMENT as infra/functions.py defines it (read from the source: the CDK import is slow)."""
    tree = ast.parse(FUNCTIONS_MODULE.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "POWERTOOLS_ENVIRONMENT" for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{FUNCTIONS_MODULE}: POWERTOOLS_ENVIRONMENT not found")


def run_once(function: str, lazy: list[str], from_source: bool) -> ImportProfile:
    """One fresh interpreter importing the handler, then the lazy modules."""
    code = "\n".join(
        [
            *(NO_BYTECODE_OUTSIDE_STDLIB if from_source else []),
            "import sys, time",
            "start = time.process_time()",
            "import handler",
            f"sys.stderr.write({CPU_PREFIX!r} + str(time.process_time() - start) + '\\n' + {MARKER!r} + '\\n')",
            *(f"import {module}" for module in lazy),
        ]
    )
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env=lambda_environment(function),
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode:
        raise RuntimeError(f"lambdas/{function}/handler.py: import failed:\n{result.stderr[-3000:]}")
    return parse_importtime(result.stderr)


def heaviest_packages(self_times: list[dict[str, int]]) -> list[tuple[str, float]]:
    """The HEAVIEST top-level packages by self time summed over their modules (median over runs, ms)."""
    packages: list[Counter[str]] = []
    for run in self_times:
        per_package: Counter[str] = Counter()
        for module, own in run.items():
            per_package[module.split(".")[0]] += own
        packages.append(per_package)
    medians = [(name, statistics.median(p[name] for p in packages) / 1000) for name in set().union(*packages)]
    return sorted(medians, key=lambda item: -item[1])[:HEAVIEST]


def figures(function: str, profiles: list[ImportProfile]) -> HandlerFigures:
    """Medians over the runs; whether the handler talks to Kubernetes, from every module it imports."""
    modules = set(profiles[0].import_self_us) | set(profiles[0].lazy_self_us)
    return HandlerFigures(
        function=function,
        kubernetes=any(m == "kubernetes" or m.startswith(("kubernetes.", "clm.kube")) for m in modules),
        import_ms=statistics.median(p.import_us for p in profiles) / 1000,
        import_cpu_ms=statistics.median(p.import_cpu_s for p in profiles) * 1000,
        lazy_ms=statistics.median(p.lazy_us for p in profiles) / 1000,
        heaviest=heaviest_packages([p.import_self_us for p in profiles]),
        heaviest_lazy=heaviest_packages([p.lazy_self_us for p in profiles]),
    )


def measure(functions: list[str], runs: int, from_source: bool) -> list[HandlerFigures]:
    """Profile every handler `runs` times, taking turns; a first run per handler finds its modules (and warms the
    bytecode caches)."""
    first = {function: run_once(function, [], from_source) for function in functions}
    lazy = {function: lazy_imports(set(first[function].import_self_us)) for function in functions}
    profiles: dict[str, list[ImportProfile]] = {function: [] for function in functions}
    for _ in range(runs):
        for function in functions:
            profiles[function].append(run_once(function, lazy[function], from_source))
    return [figures(function, profiles[function]) for function in functions]


def print_table(results: list[HandlerFigures], runs: int, from_source: bool) -> None:
    """The table of figures, one handler a row."""
    print(f"handler import times, median of {runs} runs ({'from source, no bytecode' if from_source else 'bytecode'})")
    print(
        f"{'handler':<16} {'kubernetes':<10} {'import ms':>9} {'cpu ms':>6} {'target':>6}  {'':4}  {'lazy ms':>7}  "
        "heaviest packages, self ms (import | lazy imports)"
    )
    for r in results:
        heaviest = ", ".join(f"{name} {ms:.0f}" for name, ms in r.heaviest)
        lazy = ", ".join(f"{name} {ms:.0f}" for name, ms in r.heaviest_lazy if ms >= 1) or "-"
        print(
            f"{r.function:<16} {'yes' if r.kubernetes else 'no':<10} {r.import_ms:9.0f} {r.import_cpu_ms:6.0f} "
            f"{r.target_ms:6d}  {'pass' if r.passed else 'FAIL':4}  {r.lazy_ms:7.0f}  {heaviest} | {lazy}"
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
