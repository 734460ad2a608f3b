"""The hub at fleet scale: N clusters rolling together through one CLM deployment on the sandbox, the load it put on
the regional quotas, and how many clusters can roll at once before one of them throttles.

    .venv/bin/python bench/hub_scale.py [--clusters 20] [--nodes 3] [--max-running N] [--boot-delay 5] [--grace 3]
                                        [--pod-ready 1] [--fleet 1000] [--fleet-nodes 50] [--node-seconds 150]
                                        [--region eu-central-1]

The sandbox (hub_sandbox): moto's server with CLM deployed (`clm:maxRunning` = --max-running, by default the
number of clusters, so that reconcile starts every run at once; a rollout policy of one wave with max_concurrency
N), one real kube-apiserver serving every cluster (each through its own token, audited), a node simulator per
cluster. N clusters of --nodes nodes (max_unavailable 1, 2 web pods per node behind a budget in the cluster's own
namespace) are provisioned, then a new worker AMI uploaded to the config bucket rolls them all (S3 event,
reconcile, N provision runs). Measured from the upload to the last run's end:

- StartExecution (every state machine), state transitions and Lambda calls, from the executions' histories: total,
  peak in one second, mean per second; Lambda calls' peak concurrency;
- DynamoDB read and write request units, from the sandbox's record of AWS calls (its IAM log, stamped by a
  sampler every 0.5 s), each request weighed by the registry item's size;
- Kubernetes API requests per cluster, from the API server's audit log (CLM's tokens only);
- per node rolled and per rolling cluster (per second of its run).

Computed (hub_model): the clusters rolling at once at which each quota binds, the first one, the largest safe
`clm:maxRunning`, and the hours a fleet of --fleet clusters of --fleet-nodes nodes takes at it (--node-seconds per
node, one at a time: an EC2 boot and a drain on AWS; the sandbox's are seconds). Prints counts, rates and the
machine's load; no pass/fail. Heavy: 20 clusters need minutes of both cores.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from hub_model import Demand, bindings, fleet_hours, quotas, safe_max_running
from hub_rates import LogSampler, Rate, audit_requests, dynamodb_units, history_times, peak_concurrency, rate
from hub_sandbox import Hub, start_hub
from rich.console import Console
from rich.table import Table
from roll_bound import Simulation
from roll_cost import iam_log, registry_units
from roll_sandbox import BenchError, _executions

from clm_sandbox.demo.report import history

console = Console(width=160)


@dataclass
class Measured:
    """What N clusters rolling together did: the rates and the clusters' run seconds."""

    clusters: int
    nodes: int
    window: float
    run_seconds: float  # summed over the clusters' provision runs
    starts: Rate
    starts_per_cluster: float  # provision and roll-node-pool executions per cluster
    transitions: Rate
    lambda_calls: Rate
    lambda_seconds: float
    lambda_peak: int
    reads: Rate
    writes: Rate
    kube: dict[str, Rate]
    started_by_machine: dict[str, int]
    runs_at_once: int  # the most provision runs running at one instant
    run_starts: tuple[float, float]  # the first and the last run's start, seconds after the upload
    sfn_api: dict[str, Rate]  # Step Functions API calls of the functions (throttled per account and region)


def load() -> str:
    """The machine's load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def roll_all(hub: Hub, timeout: float) -> tuple[float, float, list[str]]:
    """Upload a new worker AMI and wait for every cluster's provision run to end; the upload's time, the last end
    and the runs' ARNs. A failed run is a BenchError."""
    sandbox = hub.sandbox
    sfn = sandbox.client("stepfunctions")
    known = {e["executionArn"] for e in _executions(sfn, sandbox.provision)}
    triggered = time.time()
    sandbox.new_ami()
    deadline = time.monotonic() + timeout
    while True:
        runs = [e for e in _executions(sfn, sandbox.provision) if e["executionArn"] not in known]
        if len(runs) >= len(hub.clusters) and all(e["status"] != "RUNNING" for e in runs):
            break
        if time.monotonic() > deadline:
            raise BenchError(f"{len(runs)} of {len(hub.clusters)} runs started, not all ended after {timeout:.0f} s")
        time.sleep(1.0)
    sandbox.settle(deadline)
    failed = [e["executionArn"] for e in runs if e["status"] != "SUCCEEDED"]
    if failed:
        raise BenchError(f"runs that did not succeed: {failed}")
    return triggered, max(e["stopDate"].timestamp() for e in runs), [e["executionArn"] for e in runs]


def measure(hub: Hub, logs: Path, timeout: float) -> Measured:
    """Roll every cluster and read the rates off the histories, the IAM log and the audit log."""
    sandbox, simulation = hub.sandbox, hub.sandbox.simulation
    sfn = sandbox.client("stepfunctions")
    audit_offset = hub.plane.audit_log.stat().st_size
    with LogSampler(iam_log(logs)) as calls:
        start, end, runs = roll_all(hub, timeout)
    machines = [m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"]]
    arns = [e["executionArn"] for m in machines for e in _executions(sfn, m) if e["startDate"].timestamp() >= start]
    times = history_times({arn: history(sfn, arn) for arn in arns})
    described = [sfn.describe_execution(executionArn=arn) for arn in runs]
    spans = [(d["startDate"].timestamp(), d["stopDate"].timestamp()) for d in described]
    run_seconds = sum(stop - begin for begin, stop in spans)
    sfn_calls: dict[str, list[float]] = {}
    for at, record in calls.records:
        if record["action"].startswith("states:"):
            sfn_calls.setdefault(record["action"], []).append(at)
    read_units, write_units = registry_units(sandbox)
    reads, writes = dynamodb_units(((at, r["action"]) for at, r in calls.records), read_units, write_units)
    with hub.plane.audit_log.open() as audit:
        audit.seek(audit_offset)
        kube = audit_requests(audit)
    count = len(hub.clusters)
    rolled = [m for m in times.started if not m.endswith("reconcile")]
    return Measured(
        clusters=count,
        nodes=count * simulation.nodes,
        window=end - start,
        run_seconds=run_seconds,
        starts=rate([t for ts in times.started.values() for t in ts], start, end),
        starts_per_cluster=sum(len(times.started[m]) for m in rolled) / count,
        transitions=rate(times.transitions, start, end),
        lambda_calls=rate([c[0] for c in times.calls], start, end),
        lambda_seconds=sum(e - b for b, e in times.calls),
        lambda_peak=peak_concurrency(times.calls),
        reads=rate([t for t, _ in reads], start, end, [u for _, u in reads]),
        writes=rate([t for t, _ in writes], start, end, [u for _, u in writes]),
        kube={cluster: rate(ts, start, end) for cluster, ts in sorted(kube.items())},
        started_by_machine={machine: len(ts) for machine, ts in sorted(times.started.items())},
        runs_at_once=peak_concurrency(spans),
        run_starts=(min(b for b, _ in spans) - start, max(b for b, _ in spans) - start),
        sfn_api={action: rate(ts, start, end) for action, ts in sorted(sfn_calls.items())},
    )


def demand_of(m: Measured) -> Demand:
    """One rolling cluster's demand: mean rates per second of run (Lambda: the peak shared out, conservative)."""
    return Demand(
        start_burst=m.starts_per_cluster,
        transitions=m.transitions.total / m.run_seconds,
        lambda_concurrency=max(m.lambda_peak / m.clusters, m.lambda_seconds / m.run_seconds),
        read_units=m.reads.total / m.run_seconds,
        write_units=m.writes.total / m.run_seconds,
    )


def measured_table(m: Measured) -> Table:
    """The measured rates: totals, peaks, means, per node and per rolling cluster."""
    table = Table(title=f"Measured: {m.clusters} clusters x {m.nodes // m.clusters} nodes rolling together "
                  f"({m.window:.0f} s from the upload to the last run's end)")  # fmt: skip
    for column in ("what", "total", "peak /s", "mean /s", "per node", "per rolling cluster /s"):
        table.add_column(column, justify="left" if column == "what" else "right")
    per_run = m.run_seconds
    for label, measured in (
        ("StartExecution (every state machine)", m.starts),
        ("state transitions", m.transitions),
        ("Lambda calls", m.lambda_calls),
        ("DynamoDB read request units", m.reads),
        ("DynamoDB write request units", m.writes),
    ):
        table.add_row(
            label,
            f"{measured.total:,.0f}",
            f"{measured.peak:,.0f}",
            f"{measured.mean:,.1f}",
            f"{measured.total / m.nodes:,.1f}",
            f"{measured.total / per_run:,.2f}",
        )
    table.add_row(
        "Lambda concurrency (peak; mean)",
        f"{m.lambda_seconds:,.0f} s",
        f"{m.lambda_peak}",
        f"{m.lambda_seconds / m.window:,.1f}",
        f"{m.lambda_seconds / m.nodes:,.1f} s",
        f"{m.lambda_seconds / per_run:,.2f}",
    )
    if m.kube:
        totals = [r.total for r in m.kube.values()]
        table.add_row(
            f"Kubernetes API requests ({len(m.kube)} clusters; per cluster)",
            f"{sum(totals):,.0f}",
            f"{max(r.peak for r in m.kube.values()):,.0f}",
            f"{sum(r.mean for r in m.kube.values()) / len(m.kube):,.1f}",
            f"{sum(totals) / m.nodes:,.1f}",
            f"{sum(totals) / per_run:,.2f}",
        )
    return table


def computed_table(demand: Demand, region: str, fleet: int) -> Table:
    """Per quota: one rolling cluster's demand, the limit, and the clusters rolling at once at which it binds."""
    table = Table(title=f"Computed: the hub's quotas in {region} and the clusters rolling at once at which each binds")
    for column in ("quota", "limit", "per rolling cluster", "binds at (clusters at once)", f"{fleet:,} at once"):
        table.add_column(column, justify="left" if column == "quota" else "right")
    for binding in bindings(demand, quotas(region)):
        quota = binding.quota
        limit = f"{quota.limit:,.0f} {quota.unit}" + (f" (bucket {quota.bucket:,.0f})" if quota.bucket else "")
        table.add_row(
            quota.name,
            limit,
            f"{binding.per_cluster:,.3f}",
            f"{binding.clusters:,.0f}",
            f"{binding.per_cluster * fleet:,.0f} ({binding.per_cluster * fleet / binding.capacity:.0%})",
        )
    return table


def main() -> None:
    """Start the hub, roll every cluster, print the measured and computed tables."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=3, help="nodes per cluster")
    parser.add_argument("--max-running", type=int, help="clm:maxRunning (default: --clusters)")
    parser.add_argument("--boot-delay", type=float, default=5.0)
    parser.add_argument("--grace", type=float, default=3.0)
    parser.add_argument("--pod-ready", type=float, default=1.0)
    parser.add_argument("--fleet", type=int, default=1000)
    parser.add_argument("--fleet-nodes", type=int, default=50)
    parser.add_argument("--node-seconds", type=float, default=150.0, help="seconds per node on AWS (boot + drain)")
    parser.add_argument("--region", default="eu-central-1", help="the hub's region (its Step Functions quotas)")
    args = parser.parse_args()
    simulation = Simulation(args.nodes, 2 * args.nodes, args.boot_delay, args.grace, args.pod_ready)
    max_running = args.max_running or args.clusters
    logs = Path(tempfile.mkdtemp(prefix="clm-hub-scale-"))
    console.print(f"load {load()}; logs {logs}; clm:maxRunning {max_running}")
    began = time.monotonic()
    with ExitStack() as stack:
        hub = start_hub(stack, simulation, args.clusters, max_running, logs, console.print)
        console.print(f"{args.clusters} clusters ready after {time.monotonic() - began:.0f} s; load {load()}; rolling")
        measured = measure(hub, logs, timeout=900 + 60 * args.clusters * args.nodes)
        console.print(f"rolled; load {load()}; moto's CPU {hub.sandbox.server_cpu_seconds():.0f} s")
    console.print(measured_table(measured))
    console.print(
        f"provision runs: {measured.clusters}, at most {measured.runs_at_once} running at once, started "
        f"{measured.run_starts[0]:.1f}-{measured.run_starts[1]:.1f} s after the upload, "
        f"{measured.run_seconds / measured.clusters:.0f} s each on average; executions started: "
        + ", ".join(f"{machine} {count}" for machine, count in measured.started_by_machine.items())
    )
    console.print(
        "Step Functions API calls of the functions (total, peak /s): "
        + (", ".join(f"{action} {r.total:.0f} ({r.peak:.0f})" for action, r in measured.sfn_api.items()) or "none")
    )
    demand = demand_of(measured)
    console.print(computed_table(demand, args.region, args.fleet))
    found = bindings(demand, quotas(args.region))
    safe = safe_max_running(found, args.fleet)
    overhead = measured.run_seconds / measured.clusters  # a sandbox run's whole time, its nodes' too: conservative
    console.print(
        f"First to bind: {found[0].quota.name} at {found[0].clusters:,.0f} clusters rolling at once; the setting that "
        f"bounds it is clm:maxRunning (reconcile's cap; default 10; a rollout policy's max_concurrency caps a "
        f"config rollout below it): at most {safe:,} for {args.fleet:,} clusters."
    )
    for at_once in sorted({10, max_running, safe}):
        hours = fleet_hours(args.fleet, args.fleet_nodes, at_once, args.node_seconds, overhead)
        console.print(
            f"  {args.fleet:,} clusters x {args.fleet_nodes} nodes, {at_once} at once, {args.node_seconds:.0f} s per "
            f"node: {hours:,.1f} h"
        )
    console.print(f"load at the end {load()}; bench time {time.monotonic() - began:.0f} s; pid {os.getpid()}")


if __name__ == "__main__":
    main()
