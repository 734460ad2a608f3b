"""Faults during a run on the deployed app: each ends with a problem recorded on the cluster, the lock released,
the node pools' processes resumed and nothing lost, and the next run converges.

(A replacement node that never becomes Ready: test_workflow_provision.py.)
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from clm_sandbox.controlplane import ControlPlane
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.api_door import ApiServerDoor
from tests.integration.convergence import assert_converged, new_executions
from tests.integration.deployment import (
    ROOT,
    Deployment,
    HealthyPods,
    instances,
    register_example_cluster,
    the_run,
    wait_for_ready_pods,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),  # moto skips resources it does not model
]

POOL_STACK = "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1"
POOL_TEMPLATE = "cluster/node-pools/worker-default/stack.yaml"
SUBNETS = """VPCZoneIdentifier: !Split [",", !ImportValue {{ (cluster.local_id ~ '-subnets') | yaml }}]"""
LAST_TAG = "        Value: {{ node_pool.profile | yaml }}\n        PropagateAtLaunch: true\n"
TEAM_TAG = "      - Key: team\n        Value: platform\n        PropagateAtLaunch: true\n"
MISSING_SUBNET = "subnet-0123456789abcdef0"
KUBE_SECRET = "clm/kube-1"


# --- helpers -------------------------------------------------------------------------------------------------------


def _upload(deployment: Deployment, path: str, body: str) -> None:
    """A config change: the upload starts reconcile (S3 Object Created), which starts provision."""
    deployment.session.client("s3").put_object(
        Bucket=deployment.outputs["ConfigBucketName"], Key=f"config/{path}", Body=body.encode()
    )


def _the_failure(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The one failed run among `runs` (the others skipped)."""
    failed = [e for e in runs if e["status"] == "FAILED"]
    assert len(failed) == 1 and failed[0]["error"] == "ClusterRunFailed", [(e["status"], e.get("error")) for e in runs]
    return failed[0]


def _group(deployment: Deployment) -> dict[str, Any]:
    [group] = deployment.session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    return group


def _assert_released(deployment: Deployment) -> None:
    """No lock held, the node pool's group neither suspended nor left above its size."""
    assert deployment.registry.lock_holder(deployment.cluster_id) is None
    group = _group(deployment)
    assert (group["SuspendedProcesses"], group["DesiredCapacity"]) == ([], 3), group


def _attempts(deployment: Deployment, arns: list[str], error: str) -> int:
    """How many Lambda tasks of the executions failed with `error` (each one retried or caught)."""
    return sum(
        1
        for arn in arns
        for page in deployment.sfn.get_paginator("get_execution_history").paginate(executionArn=arn)
        for event in page["events"]
        if event.get("lambdaFunctionFailedEventDetails", {}).get("error") == error
    )


def _applying(deployment: Deployment) -> list[str]:
    """The provision executions that reached their apply phases."""
    return [
        e["executionArn"]
        for e in deployment.executions(deployment.provision)
        if "ApplyPhase" in deployment.states(e["executionArn"])
    ]


def _draining(deployment: Deployment, rolls: set[str]) -> bool:
    """Whether a roll-node-pool execution not in `rolls` runs and has started draining."""
    return any(
        "Drain" in deployment.states(e["executionArn"])
        for e in new_executions(deployment, deployment.roll_node_pool, rolls)
        if e["status"] == "RUNNING"
    )


def _wait_for(condition: Callable[[], Any], what: str, timeout: float = 120.0) -> Any:
    """Poll `condition` until it returns something truthy; return that."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.1)
    pytest.fail(f"{what}: not within {timeout} s")


@pytest.fixture
def door(deployment: Deployment, control_plane: ControlPlane) -> Iterator[ApiServerDoor]:
    """The cluster's kubeconfig secret pointed at the API server through an ApiServerDoor (open)."""
    with ApiServerDoor(control_plane.server) as door:
        kubeconfig = control_plane.kubeconfig_path.read_text().replace(control_plane.server, door.server)
        assert door.server in kubeconfig
        deployment.session.client("secretsmanager").put_secret_value(SecretId=KUBE_SECRET, SecretString=kubeconfig)
        yield door


# --- (a) a CloudFormation update that fails and rolls back ---------------------------------------------------------


def test_failed_node_pool_stack_update_rolls_back_records_the_problem_and_the_fixed_config_converges(
    deployment: Deployment, nodes: NodeSimulator
) -> None:
    register_example_cluster(deployment)
    the_run(deployment.settle(known=0))
    nodes.wait_for_ready_nodes(3, timeout=30)
    before, group_before = instances(deployment.session), _group(deployment)
    current = deployment.registry.get(deployment.cluster_id).status.current_version
    good = (ROOT / "examples" / "config" / POOL_TEMPLATE).read_text()
    tagged = good.replace(LAST_TAG, LAST_TAG + TEAM_TAG)
    broken = tagged.replace(SUBNETS, f'VPCZoneIdentifier: ["{MISSING_SUBNET}"]')
    assert good != tagged != broken
    known = len(deployment.executions(deployment.provision))
    _upload(deployment, POOL_TEMPLATE, broken)  # a tag for the nodes, and a subnet that does not exist
    failed = _the_failure(deployment.settle(known))

    status = deployment.registry.get(deployment.cluster_id).status
    pattern = (
        rf"StackFailed: cluster {deployment.cluster_id}: stack {POOL_STACK}: UPDATE_ROLLBACK_COMPLETE: resource "
        r"AutoScalingGroup \(AWS::AutoScaling::AutoScalingGroup\) UPDATE_FAILED: .*" + MISSING_SUBNET + ".*"
    )
    assert re.fullmatch(pattern, status.problems[-1].title), status.problems[-1].title
    assert status.problems[-1].instance == failed["executionArn"]
    assert status.current_version == current and status.next_version not in {"", current}
    _assert_released(deployment)
    cfn = deployment.session.client("cloudformation")
    assert cfn.describe_stacks(StackName=POOL_STACK)["Stacks"][0]["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    group = _group(deployment)  # rolled back: nothing lost
    assert (group["VPCZoneIdentifier"], group["LaunchTemplate"]) == (
        group_before["VPCZoneIdentifier"],
        group_before["LaunchTemplate"],
    )
    assert instances(deployment.session) == before

    known = len(deployment.executions(deployment.provision))
    _upload(deployment, POOL_TEMPLATE, tagged)  # the subnet fixed
    fixed = the_run(deployment.settle(known))
    status = deployment.registry.get(deployment.cluster_id).status
    desired = json.loads(fixed["output"])["plan"]["desired_version"]
    assert (status.current_version, status.next_version, status.problems) == (desired, "", [])
    assert cfn.describe_stacks(StackName=POOL_STACK)["Stacks"][0]["StackStatus"] == "UPDATE_COMPLETE"
    assert ("team", "platform") in {(tag["Key"], tag["Value"]) for tag in _group(deployment)["Tags"]}
    assert instances(deployment.session) == before  # a tag outdates no node
    _assert_released(deployment)


# --- (b) the API server unreachable for a while --------------------------------------------------------------------


def test_api_server_unreachable_for_a_while_the_apply_is_retried_and_the_run_succeeds(
    deployment: Deployment, nodes: NodeSimulator, door: ApiServerDoor, kube_api: k8s.ApiClient
) -> None:
    door.close()
    register_example_cluster(deployment)  # the first run: its apply finds the API server unreachable
    _wait_for(
        lambda: _attempts(deployment, _applying(deployment), "TransientError"),
        "no apply attempt failed with TransientError",
    )
    door.open()
    run = the_run(deployment.settle(known=0))
    assert _attempts(deployment, [run["executionArn"]], "TransientError") >= 1
    status = deployment.registry.get(deployment.cluster_id).status
    assert (status.current_version, status.next_version, status.problems) == (
        json.loads(run["output"])["plan"]["desired_version"],
        "",
        [],
    )
    assert [d.metadata.name for d in k8s.AppsV1Api(kube_api).list_namespaced_deployment("example").items] == ["web"]
    _assert_released(deployment)


def test_api_server_unreachable_past_the_retries_mid_roll_fails_with_a_problem_and_the_next_run_converges(
    deployment: Deployment, nodes: NodeSimulator, door: ApiServerDoor, kube_api: k8s.ApiClient
) -> None:
    register_example_cluster(deployment)
    the_run(deployment.settle(known=0))
    nodes.wait_for_ready_nodes(3, timeout=30)
    wait_for_ready_pods(kube_api, 3)
    before = instances(deployment.session)
    rolls = {e["executionArn"] for e in deployment.executions(deployment.roll_node_pool)}
    known, since = len(deployment.executions(deployment.provision)), len(deployment.terminations)
    cluster = deployment.registry.get(deployment.cluster_id)
    cluster.config_items["worker_ami"] = "ami-0d2b8f9a562295d9c"
    watcher = HealthyPods(kube_api)
    watcher.start()
    try:
        deployment.registry.put(cluster)  # every node outdated: a roll
        _wait_for(lambda: _draining(deployment, rolls), "the roll did not start draining")
        door.close()  # and it stays closed past every retry
        failed = _the_failure(deployment.settle(known))
        status = deployment.registry.get(deployment.cluster_id).status
        assert status.problems[-1].title.startswith(f"TransientError: cluster {deployment.cluster_id}: "), status
        assert door.server in status.problems[-1].title, status.problems[-1].title
        assert status.next_version and status.next_version != status.current_version
        failed_rolls = [e["executionArn"] for e in new_executions(deployment, deployment.roll_node_pool, rolls)]
        assert _attempts(deployment, failed_rolls, "TransientError") == 6  # the first attempt and 5 retries
        assert failed["executionArn"] == status.problems[-1].instance
        _assert_released(deployment)

        door.open()
        again = deployment.start()
    finally:
        watcher.stop()
    assert_converged(deployment, nodes, again, before, since)
    assert watcher.lowest is not None and watcher.lowest >= 2  # PDB minAvailable=2 held throughout


# --- (c) two executions racing for one cluster ---------------------------------------------------------------------


def test_two_executions_racing_for_one_cluster_one_works_the_other_skips(
    deployment: Deployment, nodes: NodeSimulator
) -> None:
    register_example_cluster(deployment)
    the_run(deployment.settle(known=0))  # the cluster is ready now: a spec change CLM's own write does not trigger
    known = len(deployment.executions(deployment.provision))
    start = threading.Barrier(2)

    def trigger(name: str) -> None:
        sfn = deployment.session.client("stepfunctions")
        start.wait()
        sfn.start_execution(
            stateMachineArn=deployment.provision,
            name=name,
            input=json.dumps({"cluster_id": deployment.cluster_id, "reason": "console"}),
        )

    racers = [threading.Thread(target=trigger, args=(f"race-{side}",)) for side in ("a", "b")]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    runs = deployment.settle(known)
    assert sorted(e["name"] for e in runs) == ["race-a", "race-b"]
    winner = the_run(runs)
    [loser] = [e for e in runs if e is not winner]
    plan = json.loads(loser["output"])["plan"]
    assert plan["reason"] == f"execution {winner['executionArn']} is already running for this cluster", plan
    assert deployment.states(loser["executionArn"]) == ["Begin", "Target", "Action", "Skipped"]
    status = deployment.registry.get(deployment.cluster_id).status
    assert (status.current_version, status.next_version) == (
        json.loads(winner["output"])["plan"]["desired_version"],
        "",
    )
    _assert_released(deployment)
