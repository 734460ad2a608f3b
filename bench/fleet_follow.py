"""A fleet whose every cluster needs a run, started at most `clm:maxRunning` at a time: how long until all have
started when reconcile follows its deferred runs (clm.workflow.follow_up), in virtual time, on moto.

The real reconcile step (registry Scan, configuration version, select, start_runs, loop_state) runs against moto's
DynamoDB, S3 and Step Functions; the bench plays the clock and the provision runs: a run that reconcile started
takes the cluster's lock and records its next version as the run's Begin step does (clm.workflow.run.begin), lasts
--run-minutes, then records success and releases the lock (run.succeed) and its execution ends. Halfway through the
first runs, the spec of every 20th cluster changes (a registry write racing the runs' status writes). The loop
looks every FOLLOW_SECONDS; a look at which no run ended and nothing changed would start nothing, so it is counted,
not made. The 15-minute schedule's reconcile executions are made: each must leave the following to the loop.
Checked at the end: every cluster at the desired version of its final spec, nothing pending, no lock, and no
cluster started before one of higher criticality. Not simulated: a loop's end after LOOP_SECONDS of real time
(the next schedule tick starts the next loop: at most one tick's wait every 6 hours).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from typing import Any

from clm.model import Cluster, ClusterStatus
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.version import desired_version
from clm.workflow import run
from clm.workflow.follow_up import FOLLOW_SECONDS
from clm.workflow.reconcile_steps import reconcile

SCHEDULE_SECONDS = 900
PASS = '{"StartAt": "Run", "States": {"Run": {"Type": "Pass", "End": true}}}'
ROLE = "arn:aws:iam::123456789012:role/clm"
CHANGED_EVERY, CHANGED_FROM = 20, 3  # every 20th cluster, some of them in the first batch (criticality 3)
# Transitions of reconcile's ASL: a look (Reconcile, FollowUp, WaitForSlots); a schedule execution that leaves the
# following to the loop, or the loop's start and end (Settle, Reconcile, FollowUp, Done).
LOOK_TRANSITIONS, EXECUTION_TRANSITIONS = 3, 4


@dataclasses.dataclass
class Fleet:
    """The simulation's moto resources and the runs in flight."""

    session: Any
    registry: DynamoRegistry
    provision: str
    reconcile_machine: str
    config_version: str
    running: dict[str, tuple[float, str, run.RunPlan]] = dataclasses.field(default_factory=dict)
    started_at: dict[str, float] = dataclasses.field(default_factory=dict)
    seen: set[str] = dataclasses.field(default_factory=set)

    def look(self, execution: str, now: float, run_seconds: float) -> dict[str, Any]:
        """One reconcile step; the runs it started begin now."""
        result = reconcile({"step": "reconcile", "execution": execution})
        sfn = self.session.client("stepfunctions")
        pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=self.provision, statusFilter="RUNNING")
        listed = [e["executionArn"] for page in pages for e in page["executions"]]
        for arn in [arn for arn in listed if arn not in self.seen]:
            self.seen.add(arn)
            cluster_id = json.loads(sfn.describe_execution(executionArn=arn)["input"])["cluster_id"]
            plan = run.begin(self.registry, self.config_version, cluster_id, arn, lambda _: True)
            self.running[arn] = (now + run_seconds, cluster_id, plan)
            self.started_at.setdefault(cluster_id, now)
        return result

    def finish(self, now: float) -> int:
        """End the runs due by `now`: success recorded, lock released, execution over."""
        due = [arn for arn, (end, _, _) in self.running.items() if end <= now]
        for arn in due:
            _, _, plan = self.running.pop(arn)
            run.succeed(self.registry, plan, arn, plan.desired_version)
            self.session.client("stepfunctions").stop_execution(executionArn=arn)
        return len(due)


def simulate(session: Any, clusters: list[Cluster], config_version: str, max_running: int, run_minutes: float) -> None:
    """Run the fleet to convergence with reconcile following its deferred runs; print the figures."""
    sfn, suffix = session.client("stepfunctions"), f"{max_running}-{time.monotonic_ns()}"
    table = f"clm-follow-{suffix}"
    create_table(session.client("dynamodb"), table)
    registry = DynamoRegistry(session.client("dynamodb"), table)
    for cluster in clusters:
        registry.put(cluster)
    provision = sfn.create_state_machine(name=f"provision-{suffix}", definition=PASS, roleArn=ROLE)["stateMachineArn"]
    machine = sfn.create_state_machine(name=f"reconcile-{suffix}", definition=PASS, roleArn=ROLE)["stateMachineArn"]
    saved = {k: os.environ.get(k) for k in ("CLM_REGISTRY_TABLE", "CLM_PROVISION_STATE_MACHINE", "CLM_MAX_RUNNING")}
    os.environ.update(
        {"CLM_REGISTRY_TABLE": table, "CLM_PROVISION_STATE_MACHINE": provision, "CLM_MAX_RUNNING": str(max_running)}
    )
    fleet = Fleet(session, registry, provision, machine, config_version)
    try:
        figures = _loop(fleet, clusters, run_minutes * 60, max_running)
    finally:
        os.environ.update({k: v for k, v in saved.items() if v is not None})
    _check(registry, clusters, config_version)
    _print(figures, len(clusters), max_running, run_minutes)


def _loop(fleet: Fleet, clusters: list[Cluster], run_seconds: float, max_running: int) -> dict[str, Any]:
    sfn = fleet.session.client("stepfunctions")
    loop = sfn.start_execution(stateMachineArn=fleet.reconcile_machine, name="loop")["executionArn"]
    now, looks, made, ticks, yielded, most = 0.0, 1, 1, 0, 0, 0
    result = fleet.look(loop, now, run_seconds)
    changed = False
    while result.get("again"):
        now += FOLLOW_SECONDS
        looks += 1
        ended = fleet.finish(now)
        change = not changed and now >= run_seconds / 2
        if change:
            changed = True
            for cluster in clusters[CHANGED_FROM::CHANGED_EVERY]:
                spec = fleet.registry.get(cluster.id)
                fleet.registry.put(dataclasses.replace(spec, config_items={**spec.config_items, "bench": "changed"}))
        if now % SCHEDULE_SECONDS < FOLLOW_SECONDS:  # the schedule's reconcile, while the loop follows
            ticks += 1
            tick = sfn.start_execution(stateMachineArn=fleet.reconcile_machine, name=f"tick-{ticks}")["executionArn"]
            yielded += "following" in fleet.look(tick, now, run_seconds)
            sfn.stop_execution(executionArn=tick)
        if ended or change:
            result = fleet.look(loop, now, run_seconds)
            made += 1
        most = max(most, len(fleet.running))
    sfn.stop_execution(executionArn=loop)
    while fleet.running:  # the last runs end
        now += FOLLOW_SECONDS
        fleet.finish(now)
    transitions = looks * LOOK_TRANSITIONS + (1 + ticks) * EXECUTION_TRANSITIONS
    starts = sorted(fleet.started_at.values())
    _check_order(fleet.started_at, clusters)
    return {
        "all_started": starts[-1],
        "looks": looks,
        "made": made,
        "ticks": ticks,
        "yielded": yielded,
        "transitions": transitions,
        "most": most,
        "runs": len(fleet.seen),
        "done": now,
    }


def _check_order(started_at: dict[str, float], clusters: list[Cluster]) -> None:
    """CLM's priority: no cluster started before one of higher criticality (all are outdated, none interrupted)."""
    criticality = {c.id: c.criticality_level for c in clusters}
    lowest_so_far = math.inf
    for when in sorted(set(started_at.values())):
        batch = [criticality[cid] for cid, at in started_at.items() if at == when]
        assert max(batch) <= lowest_so_far, (when, batch, lowest_so_far)
        lowest_so_far = min(lowest_so_far, *batch)


def _check(registry: DynamoRegistry, clusters: list[Cluster], config_version: str) -> None:
    for cluster in clusters:
        stored = registry.get(cluster.id)
        wanted = str(desired_version(stored, config_version))
        status = stored.status
        assert (status.current_version, status.next_version) in {(wanted, ""), (wanted, wanted)}, (cluster.id, status)
        assert registry.lock_holder(cluster.id) is None, cluster.id
        if cluster in clusters[CHANGED_FROM::CHANGED_EVERY]:
            assert stored.config_items.get("bench") == "changed", cluster.id


def _print(f: dict[str, Any], count: int, max_running: int, run_minutes: float) -> None:
    before = (math.ceil(count / max_running) - 1) * SCHEDULE_SECONDS  # the next tick after each batch's end
    print(
        f"maxRunning {max_running}: {count} clusters needing a run of {run_minutes:g} min: all started after "
        f"{f['all_started'] / 60:.1f} min (virtual; on the 15-minute schedule alone: {before / 60:.0f} min), "
        f"converged after {f['done'] / 60:.1f} min; {f['runs']} runs ({f['runs'] - count} for specs changed mid-way), "
        f"at most {f['most']} running"
    )
    print(
        f"  reconcile: {f['looks']} looks ({f['made']} made, the rest would start nothing), {f['ticks']} schedule "
        f"executions ({f['yielded']} left the following to the loop); {f['transitions']} state transitions = "
        f"{f['transitions'] / count:.2f} per cluster; no registry update lost (every cluster at the desired version "
        f"of its final spec, no lock, every spec change kept)"
    )


def needing_a_run(clusters: list[Cluster]) -> list[Cluster]:
    """The clusters, ready, unblocked, outdated, with criticality levels 0-3."""
    return [
        dataclasses.replace(
            c,
            lifecycle_status="ready",
            criticality_level=i % 4,
            config_items={k: v for k, v in c.config_items.items() if k != "cluster_update_block"},
            status=ClusterStatus(current_version="0000#old"),
        )
        for i, c in enumerate(clusters)
    ]
