"""The roll benchmark's figures: what a measured roll is made of, and its tables (bench/roll.py prints them)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rich.table import Table
from roll_blocked import BlockedDrain
from roll_bound import BatchStretch, Simulation, budget_bound, capacity_bound, roll_bound
from roll_history import RollExecution, Trace
from roll_sandbox import Run
from roll_watch import ReadyWatch

from clm_sandbox.demo.report import RunFigures

MAX_RATIO, MAX_OVERHEAD, MAX_TRANSITIONS, MAX_LAMBDA_SECONDS = 1.15, 3.0, 25.0, 5.0
# Run-to-run spread of the Lambda-seconds of the same calls on this VM (compared figures within it are equal).
NOISE = 0.10
MAX_BATCH_ROWS = 40  # a longer roll shows its slowest batches only


@dataclass
class RollResult:
    """The roll's run, its trace and what was derived from them."""

    run: Run
    figures: RunFigures
    trace: Trace
    simulation: Simulation
    pods_per_node: list[int]  # budget pods evicted (or forced) from each node, in drain order
    batches: list[BatchStretch]
    chain: list[RollExecution]
    first_drain: float
    roll_end: float
    watch: ReadyWatch
    server_cpu: float  # CPU seconds of moto's server process (Step Functions, Lambdas, AWS) during the run
    successors_late: list[float]  # per replaced node, its successor Ready later than the boot delay
    budget_turns: tuple[list[float], list[float]]  # within the drains: roll_watch.budget_turns' dips and idles
    idle_shares: tuple[list[float], list[float]]  # the idles split: roll_watch.idle_shares (controller, CLM)

    @property
    def nodes(self) -> int:
        return len(self.pods_per_node)

    @property
    def bound(self) -> float:
        """The lower bound of the roll (roll_bound: capacity or budget, whichever is larger)."""
        return roll_bound(self.pods_per_node, self.simulation)

    @property
    def batch_bound(self) -> float:
        """The bound of the batches as the plans chose them, one after the other (after the surge's boot, if any)."""
        surge_boot = self.simulation.boot_delay if self.simulation.surge else 0.0
        return surge_boot + sum(b.drain_bound + b.boot_delay for b in self.batches)


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left")
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right")
    return table


def roll_tables(result: RollResult) -> list[Table]:
    """The roll's figures: time against the bound, the chain of executions, cost per node, where the time went."""
    count, simulation = result.nodes, result.simulation
    total, bound = result.run.seconds, result.bound
    pods, chain = result.pods_per_node, result.chain
    events = [e.events for e in chain] or [0]
    title = f"roll of {count} nodes, max_unavailable {simulation.max_unavailable}, surge {simulation.surge}"
    summary = _table(title, "figure", "value")
    for name, value in (
        ("total (upload of the new AMI to the end of the run)", f"{total:.1f} s"),
        (
            "lower bound: max(capacity, budget)",
            f"{bound:.1f} s = max({capacity_bound(pods, simulation):.1f}, {budget_bound(pods, simulation):.1f})",
        ),
        ("ratio total / bound", f"{total / bound:.3f}"),
        ("control overhead per node (total - bound) / N", f"{(total - bound) / count:.2f} s"),
        (
            f"bound of the {len(result.batches)} batches as planned (ratio total / it)",
            f"{result.batch_bound:.1f} s ({total / result.batch_bound:.3f})",
        ),
        (
            "budget pods per node when drained (min/mean/max)",
            f"{min(pods)} / {statistics.mean(pods):.2f} / {max(pods)}",
        ),
        (
            "roll-node-pool executions in the chain (handovers)",
            f"{len(chain)} ({sum(e.handed_over for e in chain)})",
        ),
        ("history events per execution (max / total)", f"{max(events)} / {sum(events)}"),
        ("state transitions per node", f"{result.figures.transitions / count:.1f}"),
        (
            "PDB: lowest Ready web pods (changes seen, violations)",
            f"{result.watch.lowest} of {simulation.replicas} ({result.watch.changes}, {result.watch.violations})",
        ),
    ):
        summary.add_row(name, value)
    figures = result.figures
    cost = _table("cost", "figure", "total", "per node")
    for name, value, fmt in (
        ("state transitions", figures.transitions, "{:.1f}"),
        ("Lambda calls", figures.lambda_calls, "{:.1f}"),
        ("Lambda-seconds", figures.lambda_seconds, "{:.2f}"),
        ("evictions", figures.evictions, "{:.2f}"),
        ("PDB refusals (429)", figures.pdb_refusals, "{:.2f}"),
        ("CPU-seconds of moto's process (interpreter, Lambdas, AWS)", result.server_cpu, "{:.2f}"),
    ):
        cost.add_row(name, f"{value:g}" if isinstance(value, int) else f"{value:.1f}", fmt.format(value / count))
    tables = [summary, _chain_table(result), cost, _overhead_table(result), _steps_table(result.trace)]
    return [*tables, _batches_table(result)]


def _chain_table(result: RollResult) -> Table:
    table = _table("roll-node-pool executions", "execution", "history events", "nodes drained", "seconds", "handover")
    for execution in result.chain:
        seconds = (execution.stopped or result.run.stopped) - execution.started
        name = execution.arn.rsplit(":", 1)[-1]
        table.add_row(name, str(execution.events), str(execution.nodes), f"{seconds:.1f}", str(execution.handed_over))
    return table


def _batches_table(result: RollResult) -> Table:
    shown, which = result.batches, "per batch"
    if len(shown) > MAX_BATCH_ROWS:
        shown = sorted(shown, key=lambda b: b.drain_overhead + b.replace_overhead)[-10:]
        which = f"the 10 of {len(result.batches)} batches furthest beyond their bounds"
    title = f"{which} (drain: first pass to the last node empty; replace: then to the next batch's first pass)"
    table = _table(title, "batch", "budget pods", "drain s", "bound s", "replace s", "boot s", "overhead s")
    for b in shown:
        table.add_row(
            b.nodes[0] + (f" +{len(b.nodes) - 1}" if len(b.nodes) > 1 else ""),
            str(b.pods),
            f"{b.drain_seconds:.2f}",
            f"{b.drain_bound:.1f}",
            f"{b.replace_seconds:.2f}",
            f"{b.boot_delay:.1f}",
            f"{b.drain_overhead + b.replace_overhead:.2f}",
        )
    return table


def _overhead_table(result: RollResult) -> Table:
    table = _table("where the time beyond the batches' bound went", "stretch", "total s", "per batch s", "max s")
    started = result.run.started - result.run.triggered
    before = result.first_drain - result.run.started
    waited = sum(w.seconds for w in result.trace.waits if w.ended <= result.first_drain)
    after = result.run.stopped - result.roll_end
    drains = [b.drain_overhead for b in result.batches]
    replaces = [b.replace_overhead for b in result.batches]
    count = len(result.batches)
    surge = f", the surge's {result.simulation.boot_delay:g} s boot" if result.simulation.surge else ""
    for name, seconds in (
        ("upload to the provision run's start (S3 event, rule, reconcile)", started),
        (f"provision start to the first drain (steps, suspend, plan{surge}; {waited:.0f} s in Wait states)", before),
    ):
        table.add_row(name, f"{seconds:.1f}", f"{seconds / count:.2f}", "")
    table.add_row(
        "drains beyond (K-1) x pod-ready + grace (K: the batch's budget pods)",
        f"{sum(drains):.1f}",
        f"{statistics.mean(drains):.2f}",
        f"{max(drains):.2f}",
    )
    dips, idles = result.budget_turns
    late_pods = [dip - result.simulation.pod_ready_delay for dip in dips] or [0.0]
    controller, clm = result.idle_shares
    for name, seconds in (
        ("  an eviction to its replacement pod Ready, beyond pod-ready (controllers, scheduler, simulator)", late_pods),
        ("  every pod Ready to the next eviction (disruption controller, CLM)", idles or [0.0]),
        (
            f"    of {len(controller)} seen: the pod Ready to the budget's status allowing (disruption controller)",
            controller or [0.0],
        ),
        ("    the budget's status allowing to the eviction (CLM: its watch and request)", clm or [0.0]),
    ):
        table.add_row(name, f"{sum(seconds):.1f}", f"{sum(seconds) / count:.2f}", f"{max(seconds):.2f}")
    table.add_row(
        "replacements beyond the boot delay (terminate, Wait, plan; the successors' boot, unless the window slid)",
        f"{sum(replaces):.1f}",
        f"{statistics.mean(replaces):.2f}",
        f"{max(replaces):.2f}",
    )
    late = result.successors_late or [0.0]
    table.add_row(
        "  successors Ready late after their terminate call (simulator, moto; per node, overlapping in a batch)",
        f"{sum(late):.1f}",
        f"{sum(late) / count:.2f}",
        f"{max(late):.2f}",
    )
    table.add_row("roll done to the end of the run (resume, succeed)", f"{after:.1f}", f"{after / count:.2f}", "")
    return table


def _steps_table(run_trace: Trace) -> Table:
    table = _table("Lambda calls and Wait states", "step / Wait state", "count", "total s", "mean s", "max s")
    for step, calls in run_trace.by_step().items():
        seconds = [c.seconds for c in calls]
        table.add_row(
            step, str(len(calls)), f"{sum(seconds):.2f}", f"{statistics.mean(seconds):.3f}", f"{max(seconds):.2f}"
        )
    for state, waits in run_trace.by_wait_state().items():
        seconds = [w.seconds for w in waits]
        table.add_row(
            f"Wait {state}",
            str(len(waits)),
            f"{sum(seconds):.1f}",
            f"{statistics.mean(seconds):.2f}",
            f"{max(seconds):.2f}",
        )
    return table


def blocked_table(drains: list[BlockedDrain]) -> Table:
    table = _table(
        "blocked drain (one node, its pod forced after the drain grace period)",
        "blocked for",
        "run s",
        "drain passes",
        "parks",
        "drain Lambda-s",
        "Lambda-s per call",
        "run Lambda-s",
        "transitions",
        "forced",
    )
    for d in drains:
        table.add_row(
            f"{d.blocked_for} s",
            f"{d.run_seconds:.1f}",
            str(d.passes),
            str(d.parks),
            f"{d.drain_lambda_seconds:.2f}",
            f"{d.drain_lambda_seconds / max(d.drain_calls, 1):.3f}",
            f"{d.figures.lambda_seconds:.2f}",
            str(d.figures.transitions),
            str(d.forced),
        )
    return table


def targets_table(result: RollResult, drains: list[BlockedDrain]) -> tuple[Table, list[str]]:
    """Each target, what was measured, pass or MISS; and the names of the missed ones."""
    count = result.nodes
    total, bound = result.run.seconds, result.bound
    rows: list[tuple[str, str, str, bool]] = [
        ("roll time / lower bound", f"<= {MAX_RATIO}", f"{total / bound:.3f}", total / bound <= MAX_RATIO),
        (
            "control overhead per node",
            f"<= {MAX_OVERHEAD:g} s",
            f"{(total - bound) / count:.2f} s",
            (total - bound) / count <= MAX_OVERHEAD,
        ),
        (
            "state transitions per node",
            f"<= {MAX_TRANSITIONS:g}",
            f"{result.figures.transitions / count:.1f}",
            result.figures.transitions / count <= MAX_TRANSITIONS,
        ),
        (
            "Lambda-seconds per node",
            f"<= {MAX_LAMBDA_SECONDS:g}",
            f"{result.figures.lambda_seconds / count:.2f}",
            result.figures.lambda_seconds / count <= MAX_LAMBDA_SECONDS,
        ),
        ("PDB violations", "0", str(result.watch.violations), result.watch.violations == 0),
    ]
    if len(drains) >= 2:
        short, long = drains[0], drains[-1]
        blocked = f"blocked {long.blocked_for} s vs {short.blocked_for} s"
        rows += [
            (
                f"drain Lambda calls {blocked}",
                "no more",
                f"{long.drain_calls} vs {short.drain_calls}",
                long.drain_calls <= short.drain_calls,
            ),
            (  # the same calls take a few percent more or less from run to run on a shared VM
                f"drain Lambda-s {blocked}",
                f"no more (+{NOISE:.0%} noise)",
                f"{long.drain_lambda_seconds:.2f} vs {short.drain_lambda_seconds:.2f}",
                long.drain_lambda_seconds <= short.drain_lambda_seconds * (1 + NOISE),
            ),
        ]
    table = _table("targets", "target", "wanted", "measured", "")
    for name, wanted, measured, ok in rows:
        table.add_row(name, wanted, measured, "[green]pass[/]" if ok else "[bold red]MISS[/]")
    return table, [name for name, _, _, ok in rows if not ok]
