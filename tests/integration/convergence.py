"""What a cluster looks like once a roll that was interrupted (killed, failed) has been run again to the end."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import Deployment, instances

NODES = 3  # the example cluster's node pool


def new_executions(deployment: Deployment, state_machine: str, known: set[str]) -> list[dict[str, Any]]:
    """The executions of the state machine whose ARNs are not in `known`, oldest first."""
    return [e for e in deployment.executions(state_machine) if e["executionArn"] not in known]


def terminated(deployment: Deployment, since: int = 0) -> Counter[str]:
    """How often each instance was terminated through its group after the first `since` terminations of
    `deployment.terminations` (by Replace's Terminate, a batch's pass, or anyone else: as moto did them)."""
    return Counter(deployment.terminations[since:])


def assert_converged(
    deployment: Deployment, nodes: NodeSimulator, again: dict[str, Any], before: set[str], since: int
) -> None:
    """`again`, the run after an interrupted one, succeeded (a skip only when the interrupted run had finished its
    work), every node outdated at the start (`before`) was terminated exactly once after the first `since`
    terminations of `deployment.terminations` (those of an interrupted call too: a batch's pass terminates), the
    group is back to its size with its processes resumed, the registry is at the desired version with nothing
    pending, and no lock is held."""
    assert again["status"] == "SUCCEEDED", again
    plan = json.loads(again["output"])["plan"]
    assert plan["action"] == "provision" or plan["reason"].startswith("up to date"), plan
    after = instances(deployment.session)
    assert len(after) == NODES and not after & before, (before, after)
    assert terminated(deployment, since) == Counter(before), "every outdated instance terminated exactly once"
    assert len(nodes.wait_for_ready_nodes(NODES, timeout=30)) == NODES
    [group] = deployment.session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert (group["DesiredCapacity"], group["MinSize"], group["SuspendedProcesses"]) == (NODES, NODES, [])
    status = deployment.registry.get(deployment.cluster_id).status
    assert (status.current_version, status.next_version, status.problems) == (plan["desired_version"], "", [])
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
