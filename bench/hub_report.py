"""The hub benchmark's report (bench/hub_scale.py): what N clusters rolling together measured, one rolling cluster's
demand derived from it, and the computed table of the quotas (hub_model)."""

from __future__ import annotations

from dataclasses import dataclass

from hub_model import (
    LARGE_REGIONS,
    STARTS_TOGETHER,
    Demand,
    aligned_clusters,
    bindings,
    fleet_hours,
    quotas,
    safe_max_running,
)
from hub_rates import Rate
from rich.console import Console
from rich.table import Table

console = Console(width=160)


@dataclass
class Measured:
    """What N clusters rolling together did: the rates and the clusters' run seconds."""

    clusters: int
    nodes: int
    window: float
    run_seconds: float  # summed over the clusters' provision runs
    run_spread: tuple[float, float, float]  # the shortest, median and longest run
    by_state: dict[str, int]  # transitions by state name, the most first
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
    pdb_violations: int  # changes after which a cluster had fewer Ready web pods than its budget's minimum


def demand_of(m: Measured) -> Demand:
    """One rolling cluster's demand: mean rates per second of run (Lambda: the peak shared out when larger: a
    cluster's run calls one function at a time per node of its batch)."""
    return Demand(
        start_burst=STARTS_TOGETHER,
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
    large = f"binds at in {'/'.join(LARGE_REGIONS)}"
    columns = ("quota", "limit", "per rolling cluster", "binds at (clusters at once)", large, f"{fleet:,} at once")
    for column in columns:
        table.add_column(column, justify="left" if column == "quota" else "right")
    in_large = {b.quota.name: b.clusters for b in bindings(demand, quotas(LARGE_REGIONS[0]))}
    for binding in bindings(demand, quotas(region)):
        quota = binding.quota
        limit = f"{quota.limit:,.0f} {quota.unit}" + (f" (bucket {quota.bucket:,.0f})" if quota.bucket else "")
        table.add_row(
            quota.name,
            limit,
            f"{binding.per_cluster:,.3f}",
            f"{binding.clusters:,.0f}",
            f"{in_large[quota.name]:,.0f}",
            f"{binding.per_cluster * fleet:,.0f} ({binding.per_cluster * fleet / binding.capacity:.0%})",
        )
    return table


def report(
    measured: Measured, region: str, fleet: int, fleet_nodes: int, node_seconds: float, max_running: int
) -> None:
    """Print the measured table, the runs' and calls' lines, the computed table and the fleet's figures."""
    console.print(measured_table(measured))
    shortest, median, longest = measured.run_spread
    console.print(
        f"provision runs: {measured.clusters}, at most {measured.runs_at_once} running at once, started "
        f"{measured.run_starts[0]:.1f}-{measured.run_starts[1]:.1f} s after the upload, {shortest:.0f} / {median:.0f} "
        f"/ {longest:.0f} s each (shortest / median / longest); {measured.pdb_violations} PDB violations; executions "
        "started: " + ", ".join(f"{machine} {count}" for machine, count in measured.started_by_machine.items())
    )
    console.print(
        "transitions per node by state: "
        + ", ".join(f"{state} {count / measured.nodes:.1f}" for state, count in list(measured.by_state.items())[:12])
    )
    console.print(
        "Step Functions API calls of the functions (total, peak /s): "
        + (", ".join(f"{action} {r.total:.0f} ({r.peak:.0f})" for action, r in measured.sfn_api.items()) or "none")
    )
    demand = demand_of(measured)
    console.print(computed_table(demand, region, fleet))
    found = bindings(demand, quotas(region))
    safe = safe_max_running(found, fleet)
    overhead = measured.run_seconds / measured.clusters  # a sandbox run's whole time, its nodes' too: conservative
    console.print(
        f"First to bind: {found[0].quota.name} at {found[0].clusters:,.0f} clusters rolling at once; the setting that "
        f"bounds it is clm:maxRunning (reconcile's cap; default 10; a rollout policy's max_concurrency caps a "
        f"config rollout below it): at most {safe:,} for {fleet:,} clusters."
    )
    busiest = measured.transitions.peak / measured.clusters
    transition = next(b.quota for b in found if b.quota.name.endswith("StateTransition"))
    console.print(
        f"Busiest second: {busiest:.2f} transitions per rolling cluster; were every cluster's busiest second at once "
        f"(runs started by one upload), bucket and refill would hold {aligned_clusters(transition, busiest):,.0f} "
        "clusters in it; beyond, Step Functions delays transitions (ExecutionThrottled), it does not fail them."
    )
    console.print(
        f"A pool of {fleet_nodes} nodes rolled one at a time asks the same per second as the sandbox's (its nodes one "
        "after another, each at least as slow on AWS), for longer; a batch of k nodes (max_unavailable k) asks up to k "
        "Lambda calls at once."
    )
    for at_once in sorted({10, max_running, safe}):
        hours = fleet_hours(fleet, fleet_nodes, at_once, node_seconds, overhead)
        console.print(
            f"  {fleet:,} clusters x {fleet_nodes} nodes, {at_once} at once, {node_seconds:.0f} s per "
            f"node: {hours:,.1f} h"
        )
