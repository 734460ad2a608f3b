"""Roll benchmark: a pool of N nodes rolled by CLM on the sandbox, against the physical limit, and its cost per node.

    .venv/bin/python bench/roll.py [--nodes 20] [--max-unavailable 1] [--surge 0] [--boot-delay 5] [--grace 3]
                                   [--pod-ready 1] [--replicas 2N] [--blocked 60,600] [--split]

The sandbox (roll_sandbox): the CDK app deployed into moto's server, run as a process of its own with the Lambda
handlers in-process (warm containers, as Lambda keeps them; a fresh interpreter per call would time Python's
start, not CLM) so that Step Functions, the handlers and AWS (CLM's side) do not share an interpreter with this
process's node simulator and watcher (the kubelets' side); the real Kubernetes control plane; the node simulator
(new Nodes Ready `--boot-delay` s after launch, pods Ready `--pod-ready` s after binding, grace periods in real
time). Time is scaled only through these delays (seconds where AWS and kubelets take minutes); Wait states and the
roll's own timing run in real time. kube-1 gets one pool of exactly N nodes (`--max-unavailable`, `--surge`: counts
or percentages of the pool, its config items; `--split`: one auto scaling group per zone, the test profile modelled on
Zalando's worker-splitaz, N a multiple of 3) and `--replicas` web pods with a `--grace` s grace period behind their
PodDisruptionBudget (minAvailable = replicas - 1). A new worker AMI uploaded to the config bucket triggers the roll
(S3 event, reconcile, provision), timed from the upload to the end of the run:

- lower bound (roll_bound): max(capacity, budget): every node's drain and its successor's boot shared among
  max_unavailable slots (with a surge: its boot, then surge + max_unavailable slots, no boot for the nodes the
  surplus covers), or every eviction of the pool one after the other (one budget), a grace and a boot;
  per node k_i observed (pods evicted); ratio = total / bound; control overhead per node = (total - bound) / N;
- the chain of roll-node-pool executions (each hands over after its budget of steps), the history events of each
  (Step Functions fails an execution at 25,000), state transitions per node;
- PDB violations: the Ready web pods at every change of one (roll_watch), never below the budget's minimum;
- cost per node: Step Functions state transitions, Lambda calls and Lambda-seconds of the run and its children
  (clm_sandbox.demo.report.run_figures), and the CPU time of moto's process; in dollars at list prices with the
  DynamoDB and S3 requests (roll_cost), and the same for a provision run that changes nothing;
- where the time went: before the first drain, per batch its drain and its replacement against their bounds,
  after the roll; Lambda seconds per step and Wait state seconds per state; a row per batch (the slowest ten of a
  long roll).

Then the blocked drain (roll_blocked): a one-node pool whose pod a budget never lets go, forced after
`drain_grace_period` = each of `--blocked` seconds: the Lambda calls and seconds its drain passes and parks cost,
against the time.
Prints the targets with pass/MISS and exits 0 whatever they say (a measurement), 1 if the sandbox fails.
Time figures depend on the machine's load (printed at the start, after the roll and at the end); counts do not.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import prices
from rich.console import Console
from roll_blocked import add_hold_pool, blocked_drain
from roll_bound import Simulation, stretches
from roll_cost import log_offset, no_change_run, run_usage
from roll_history import Trace, batches, node_drains, roll_chain, run_histories, terminations, trace
from roll_report import RollResult, blocked_table, roll_tables, targets_table
from roll_sandbox import NEW_AMI, BenchError, RollSandbox, start
from roll_watch import BudgetWatch, ReadyWatch, budget_turns, idle_shares

from clm.rolling.settings import roll_settings
from clm_sandbox.demo.report import run_figures
from clm_sandbox.demo.steps import DemoError
from clm_sandbox.nodesim import EventKind

console = Console(highlight=False, width=130)


def measure_roll(sandbox: RollSandbox, logs: Path, ami: str = NEW_AMI, name: str = "roll") -> RollResult:
    """Trigger the roll (worker AMI `ami` in the config), time it, and read its histories (kept in `logs` as
    `name`-histories.json)."""
    simulation = sandbox.simulation
    watch = ReadyWatch(sandbox.kube_api, simulation.replicas - 1)
    watch.start()
    budget = BudgetWatch(sandbox.kube_api)
    budget.start()
    cpu = sandbox.server_cpu_seconds()
    try:
        run = sandbox.run(lambda: sandbox.new_ami(ami))
    finally:
        watch.stop()
        budget.stop()
    cpu = sandbox.server_cpu_seconds() - cpu
    sfn = sandbox.client("stepfunctions")
    histories = run_histories(sfn, run.arn)
    (logs / f"{name}-histories.json").write_text(json.dumps(histories, default=str))
    run_trace = trace(histories)
    drains = node_drains(run_trace.calls)
    if not drains or any(d.done is None for d in drains):
        raise RuntimeError(f"run {run.arn}: a node's drain did not finish: {drains}")
    roll_end = next(
        (c.ended for c in run_trace.calls if c.step == "plan" and (c.result or {}).get("action") == "done"), run.stopped
    )
    grouped = [
        (
            tuple(d.node for d in batch),
            sum(d.evicted + d.forced for d in batch),
            min(d.started for d in batch),
            max(d.done or d.started for d in batch),
        )
        for batch in batches(run_trace.calls, drains)
    ]
    late = successors_late(run_trace, sandbox, simulation.boot_delay)
    windows = [(start, done) for *_, start, done in grouped]
    turns = budget_turns(watch.timeline, simulation.replicas, windows)
    shares = idle_shares(watch.timeline, simulation.replicas, windows, budget.allowing)
    return RollResult(
        run,
        run_figures(sfn, run.arn),
        run_trace,
        simulation,
        [d.evicted + d.forced for d in drains],
        stretches(grouped, roll_end, simulation),
        roll_chain(histories, run_trace),
        drains[0].started,
        roll_end,
        watch,
        cpu,
        late,
        turns,
        shares,
    )


def successors_late(run_trace: Trace, sandbox: RollSandbox, boot_delay: float) -> list[float]:
    """Per terminated node, how much later than the boot delay after its termination (CLM's Terminate call, or a
    batch's pass) its successor's Node was made Ready: the simulator's and moto's share of the replace stretch, not
    CLM's. Terminations and Nodes Ready are paired in order (the successors of a batch's nodes boot alike)."""
    assert sandbox.simulator is not None
    offset = time.time() - time.monotonic()
    ready = iter(sorted(event.at + offset for event in sandbox.simulator.events_of(EventKind.NODE_READY)))
    late = []
    for ended in terminations(run_trace.calls):
        successor = next((at for at in ready if at > ended), None)
        if successor is None:
            break
        late.append(max(successor - ended - boot_delay, 0.0))
    return late


def load() -> str:
    """The load averages (1, 5, 15 min) and the CPU count."""
    one, five, fifteen = Path("/proc/loadavg").read_text().split()[:3]
    return f"load average {one}, {five}, {fifteen} on {os.cpu_count() or 1} CPUs"


def _no_change_cost(sandbox: RollSandbox, logs: Path) -> str:
    """The cost line of a run that changes nothing, or why there was none (the roll's figures stand without it)."""
    try:
        return no_change_run(sandbox, logs).line()
    except (BenchError, DemoError) as exc:
        return f"[bold red]not measured:[/] {type(exc).__name__}: {exc}"


def _say(text: str) -> None:
    console.print(f"[dim]{text}[/]")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench/roll.py", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20, help="nodes in the pool (default 20)")
    parser.add_argument(
        "--max-unavailable", default="1", help="the pool's max_unavailable: a count or a percentage ('10%%'; 1)"
    )
    parser.add_argument("--surge", default="0", help="the pool's surge: a count or a percentage ('100%%'; 0)")
    parser.add_argument("--boot-delay", type=float, default=5.0, help="seconds from launch to a Ready Node (5)")
    parser.add_argument("--grace", type=int, default=3, help="the web pods' termination grace period, s (3)")
    parser.add_argument("--pod-ready", type=float, default=1.0, help="seconds from binding to a Ready pod (1)")
    parser.add_argument("--replicas", type=int, default=None, help="web pods (default: 2 per node)")
    parser.add_argument("--blocked", default="60,600", help="blocked drain durations, s, comma-separated ('' skips)")
    parser.add_argument("--split", action="store_true", help="one auto scaling group per zone (N a multiple of 3)")
    return parser


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark; exit 0 with its figures (targets missed or not), 1 if the sandbox fails."""
    args = _parser().parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: stop the sandbox's processes
    settings = roll_settings({"max_unavailable": args.max_unavailable, "surge": args.surge}, {}, pool_size=args.nodes)
    simulation = Simulation(
        args.nodes,
        args.replicas or 2 * args.nodes,
        args.boot_delay,
        args.grace,
        args.pod_ready,
        settings.max_unavailable,
        settings.surge,
    )
    blocked = [int(s) for s in args.blocked.split(",") if s.strip()]
    logs = Path(tempfile.mkdtemp(prefix="clm-roll-bench-"))
    started = time.monotonic()
    console.print(
        f"roll benchmark: {simulation} (max_unavailable {args.max_unavailable!r}, surge {args.surge!r}"
        f"{', one group per zone' if args.split else ''}); logs in {logs}\n"
        f"at the start: {load()}"
    )
    try:
        with ExitStack() as stack:
            sandbox = start(stack, simulation, logs, _say, args.max_unavailable, args.surge, split=args.split)
            console.print(f"[dim]setup done after {time.monotonic() - started:.0f} s; rolling ({load()})[/]")
            offset = log_offset(logs)
            result = measure_roll(sandbox, logs)
            console.print(f"after the roll: {load()}")
            for table in roll_tables(result):
                console.print(table)
            per_node = run_usage(sandbox, result.run.arn, logs, offset).scaled(1 / result.nodes)
            console.print(f"cost per node rolled ({prices.REGION} list prices of {prices.AS_OF}): {per_node.line()}")
            console.print(f"cost of a provision run that changes nothing: {_no_change_cost(sandbox, logs)}")
            drains = []
            if blocked:
                add_hold_pool(sandbox)
                for seconds in blocked:
                    console.print(f"[dim]blocked drain of {seconds} s ({load()})[/]")
                    drains.append(blocked_drain(sandbox, seconds))
                console.print(blocked_table(drains))
    except Exception as exc:
        console.print(f"[bold red]benchmark failed:[/] {type(exc).__name__}: {exc} (logs in {logs})")
        raise SystemExit(1) from exc
    table, missed = targets_table(result, drains)
    console.print(table)
    console.print(f"at the end: {load()}; {time.monotonic() - started:.0f} s in all")
    console.print("[bold red]missed: " + "; ".join(missed) + "[/]" if missed else "[green]every target met[/]")


if __name__ == "__main__":
    main()
