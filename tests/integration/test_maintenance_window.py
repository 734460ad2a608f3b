"""Maintenance windows end to end (IAM enforced, a real kube-apiserver, simulated nodes): a roll outside the cluster's
window waits before its first node (its non-disruptive work done), and a roll crossing the window's end stops at its
next node boundary, no node left half-drained, `clm status` saying why and when the window opens again."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from kubernetes import client as k8s

from clm.cli.main import cli
from clm.model import Cluster
from clm.registry.rollouts import RolloutStore
from clm.rollout.progress import config_version_of
from clm.rollout.state import ROLLING
from clm.timestamps import format_time
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import (
    Deployment,
    instances,
    provisioned,
    register_example_cluster,
    upload_new_ami,
    wait_for_roll,
)

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def window(opens: datetime, closes: datetime) -> str:
    """A one-span window (UTC, whole seconds) open from `opens` to `closes` (less than a day later): it crosses
    midnight when they fall on different days."""
    return f"{DAYS[opens.weekday()]} {opens:%H:%M:%S}-{closes:%H:%M:%S} UTC"


def with_window(cluster: Cluster, text: str) -> Cluster:
    return dataclasses.replace(cluster, config_items={**cluster.config_items, "maintenance_window": text})


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def clm(deployment: Deployment, *args: str) -> str:
    """What `clm` with the deployment's registry table prints."""
    return CliRunner().invoke(cli, ["--table", deployment.outputs["RegistryTableName"], *args]).output


def last_problem(deployment: Deployment) -> str:
    """The last problem as `clm status` shows it."""
    [row] = json.loads(clm(deployment, "-o", "json", "status", deployment.cluster_id))
    return row["last_problem"] or ""


def cordoned(kube_api: k8s.ApiClient, live: set[str]) -> list[str]:
    """Nodes of running instances left cordoned (a finished node's Node may outlive its terminated instance)."""
    return [
        n.metadata.name
        for n in k8s.CoreV1Api(kube_api).list_node().items
        if n.spec.unschedulable and (n.spec.provider_id or "").rsplit("/", 1)[-1] in live
    ]


def test_roll_waits_outside_its_window_and_stops_at_a_node_boundary_when_the_window_closes(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    register_example_cluster(deployment)
    before = provisioned(deployment, nodes, kube_api)
    cluster = deployment.registry.get(deployment.cluster_id)

    # Outside the window: it opens in an hour. The item's own run (a spec change) replaces nothing and succeeds.
    opens = now() + timedelta(hours=1)
    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(with_window(cluster, window(opens, opens + timedelta(hours=1))))
    deployment.settle(known)
    known = len(deployment.executions(deployment.provision))
    upload_new_ami(deployment)  # every node outdated: reconcile starts the run
    runs = deployment.settle(known)
    [waited] = [e for e in runs if e["status"] == "FAILED"]
    states = deployment.states(waited["executionArn"])
    assert "ApplyPhase" in states and "RollNodePool" in states  # the manifests are not held, the roll is
    [roll] = deployment.executions(deployment.roll_node_pool)[-1:]
    assert "Drain" not in deployment.states(roll["executionArn"]) and "Scale" not in deployment.states(
        roll["executionArn"]
    )
    assert instances(deployment.session) == before
    assert last_problem(deployment).startswith(
        f"MaintenanceWindowClosed: waiting for maintenance window (opens {format_time(opens)}); "
        f"cluster {deployment.cluster_id}, node pool default-worker: maintenance window "
    ), last_problem(deployment)
    status = deployment.registry.get(deployment.cluster_id).status
    assert status.next_version and status.next_version != status.current_version  # the update is still due
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    followed = clm(deployment, "provision", deployment.cluster_id, "--follow")  # tried again: it waits again
    waiting = f"MaintenanceWindowClosed: waiting for maintenance window (opens {format_time(opens)})"
    assert f"[default-worker] Plan failed: {waiting}" in followed, followed
    assert [line for line in followed.splitlines() if line.startswith("FAILED  ") and waiting in line], followed
    assert instances(deployment.session) == before
    rollouts = RolloutStore(deployment.session.client("dynamodb"), deployment.outputs["RegistryTableName"])
    rollout = rollouts.get(str(config_version_of(status.next_version)))
    assert rollout is not None and rollout.state == ROLLING  # a wait halts no rollout

    # Inside the window: the item's edit starts the run that rolls. Once a node is draining, the window is set to
    # close 3 s later. Why the margin holds on 2 busy cores: the window is read at each plan (a node boundary), and
    # load only slows the roll down. If the plan after the draining node comes before the close, the roll takes
    # one more node and stops at the plan after it; replacing all three would need two more nodes' drains, boots
    # (1 s each in the simulator) and plans within 3 s of the first drain, faster than the sandbox rolls when idle.
    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(with_window(cluster, window(now() - timedelta(minutes=1), now() + timedelta(hours=1))))
    wait_for_roll(deployment, lambda states: "Drain" in states, "a drain")
    start = now() - timedelta(minutes=1)
    closes = now() + timedelta(seconds=3)
    deployment.registry.put(with_window(cluster, window(start, closes)))  # its own run skips: the lock is held
    runs = deployment.settle(known)
    failed = [e for e in runs if e["status"] == "FAILED"]
    assert len(failed) == 1, [(e["status"], e.get("error")) for e in runs]
    [roll] = deployment.executions(deployment.roll_node_pool)[-1:]
    assert deployment.states(roll["executionArn"])[-1] == "Plan"  # stopped at a plan, never inside a drain
    replaced = before - instances(deployment.session)
    assert 1 <= len(replaced) < 3, replaced  # the node being drained was finished, the rest wait for the window
    assert cordoned(kube_api, instances(deployment.session)) == []
    assert last_problem(deployment).startswith(
        f"MaintenanceWindowClosed: stopped at node boundary: window closed at {format_time(closes)} "
        f"(opens {format_time(start + timedelta(days=7))}); cluster {deployment.cluster_id}, node pool default-worker"
    ), last_problem(deployment)
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    groups = deployment.session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert [g["SuspendedProcesses"] for g in groups] == [[]]
