"""The hub at fleet scale: N clusters rolling together through one CLM deployment on the sandbox, the load it put on
the regional quotas, and how many clusters can roll at once before one of them throttles.

    .venv/bin/python bench/hub_scale.py [--clusters 20] [--nodes 3] [--max-running N] [--boot-delay 5] [--grace 3]
                                        [--pod-ready 1] [--fleet 1000] [--fleet-nodes 50] [--node-seconds 150]
                                        [--region eu-central-1]

The sandbox (hub_sandbox): moto's server with CLM deployed (`clm:maxRunning` = --max-running, by default the
number of clusters, so that reconcile starts every run in one pass: at its default 10, 20 clusters would roll in
two rounds of 10; a rollout policy of one wave with max_concurrency N, whose default 3 would cap them again), one
real kube-apiserver serving every cluster (each through its own token, audited), a node simulator per
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
machine's load; no pass/fail. 20 clusters of 3 nodes take about 4 minutes of both cores (the roll itself ~100 s,
moto's process busy 1.3 cores of the 2 throughout), PDB violations counted by a watch per cluster.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from hub_rates import LogSampler, audit_requests, dynamodb_units, history_times, peak_concurrency, rate
from hub_report import Measured, console, report
from hub_sandbox import NAMESPACE, Hub, start_hub
from roll_bound import Simulation
from roll_cost import iam_log, registry_units
from roll_sandbox import BenchError, _executions
from roll_watch import ReadyWatch

from clm_sandbox.demo.report import history


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
    watches = [
        ReadyWatch(sandbox.kube_api, simulation.replicas - 1, f"{NAMESPACE}-{cluster.local_id}")
        for cluster in hub.clusters
    ]
    for watch in watches:
        watch.start()
    try:
        with LogSampler(iam_log(logs)) as calls:
            start, end, runs = roll_all(hub, timeout)
    finally:
        for watch in watches:
            watch.stop()
    machines = [m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"]]
    arns = [e["executionArn"] for m in machines for e in _executions(sfn, m) if e["startDate"].timestamp() >= start]
    times = history_times({arn: history(sfn, arn) for arn in arns})
    described = [sfn.describe_execution(executionArn=arn) for arn in runs]
    spans = [(d["startDate"].timestamp(), d["stopDate"].timestamp()) for d in described]
    durations = [stop - begin for begin, stop in spans]
    run_seconds = sum(durations)
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
        run_spread=(min(durations), statistics.median(durations), max(durations)),
        by_state=dict(times.by_state.most_common()),
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
        pdb_violations=sum(watch.violations for watch in watches),
    )


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
    report(measured, args.region, args.fleet, args.fleet_nodes, args.node_seconds, max_running)
    console.print(f"load at the end {load()}; bench time {time.monotonic() - began:.0f} s; pid {os.getpid()}")


if __name__ == "__main__":
    main()
