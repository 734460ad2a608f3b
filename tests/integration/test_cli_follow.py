"""The `clm` CLI against the CDK app deployed into moto (real workflows and Lambda handlers, real control plane, node
simulator): `provision --follow` shows a first provision and a node roll step by step to SUCCEEDED, `decommission
--follow` follows the run the registry trigger starts, and `status` and `registry delete` see the outcome."""

from __future__ import annotations

import json

import boto3
import pytest
from click.testing import CliRunner, Result

from clm.cli.main import cli
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import ROOT, Deployment, register_example_cluster

pytestmark = [
    pytest.mark.integration,
    # moto's CloudFormation skips AWS::S3::BucketPolicy and AWS::CloudWatch::Alarm (nothing tested here needs them)
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),
]
NEW_AMI = ("worker_ami: ami-0c1a7f89451184c8b", "worker_ami: ami-0d2b8f9a562295d9c")


def switch_rules(session: boto3.Session, bus: str, enabled: bool) -> None:
    """Enable or disable every rule of the bus (the default bus: config uploads and the schedule start reconcile;
    CLM's bus: registry changes start provision)."""
    events = session.client("events")
    for rule in events.list_rules(EventBusName=bus)["Rules"]:
        switch = events.enable_rule if enabled else events.disable_rule
        switch(Name=rule["Name"], EventBusName=bus)


def clm(deployed: Deployment, *args: str) -> Result:
    """`clm` with the deployment's registry table, as a user would run it."""
    return CliRunner().invoke(cli, ["--table", deployed.outputs["RegistryTableName"], *args], catch_exceptions=True)


def progress(result: Result) -> list[str]:
    """The lines `--follow` printed (time-stamped steps, then the outcome), without the handlers' own log lines."""
    return [line[10:] for line in result.output.splitlines() if line[:2].isdigit() and line[2] == ":"]


def outcome(result: Result) -> str:
    [line] = [line for line in result.output.splitlines() if line.startswith(("SUCCEEDED  ", "FAILED  "))]
    return line


def test_provision_and_decommission_followed_to_the_end(deployment: Deployment, nodes: NodeSimulator) -> None:
    cluster_id = deployment.cluster_id
    for bus in ("default", deployment.outputs["EventBusName"]):  # runs start only from the CLI
        switch_rules(deployment.session, bus, enabled=False)
    deployment.settle()  # the reconcile of the deployment's config upload is over
    register_example_cluster(deployment)

    first = clm(deployment, "provision", cluster_id, "--follow", "--reason", "first provision")
    assert first.exit_code == 0, (first.output, first.exception)
    steps = progress(first)
    assert steps[0].startswith("Begin: provision (never provisioned -> ")
    for expected in (
        "StartStack kube-1: created",
        "Stack kube-1: CREATE_COMPLETE",
        "ApplyPhase manifests: 7 created, 0 configured, 0 skipped",
    ):
        assert expected in steps, (expected, steps)
    assert not [step for step in steps if step.startswith("[default-worker] ")]  # a new cluster rolls nothing
    assert outcome(first).startswith("SUCCEEDED  execution ")

    defaults = ROOT / "examples" / "config" / "cluster" / "config-defaults.yaml"
    deployment.session.client("s3").put_object(
        Bucket=deployment.outputs["ConfigBucketName"],
        Key="config/cluster/config-defaults.yaml",
        Body=defaults.read_text().replace(*NEW_AMI).encode(),
    )
    roll = clm(deployment, "provision", cluster_id, "--follow", "--override-rollout")  # now, not when admitted
    assert roll.exit_code == 0, (roll.output, roll.exception)
    pool = [step for step in progress(roll) if step.startswith("[default-worker] ")]
    assert [step.split()[1] for step in pool].count("Drain") >= 3
    terminated = [step for step in pool if step.startswith("[default-worker] Drain ") and " terminated (" in step]
    assert len(terminated) == 3, pool  # each node's drain terminated it as its pass ended, and said so
    assert pool[-1] == "[default-worker] SUCCEEDED"
    assert any(step.endswith("(3/3 replaced)") for step in pool)
    assert any("replacement node(s) Ready" in step for step in pool)
    assert "3/3 nodes replaced" in roll.output  # the pool's progress bar, complete
    version = deployment.registry.get(cluster_id).status.current_version
    [row] = json.loads(clm(deployment, "-o", "json", "status", cluster_id).stdout)
    assert (row["current_version"], row["running_execution"], row["last_problem"]) == (version, None, None)

    switch_rules(deployment.session, deployment.outputs["EventBusName"], enabled=True)  # the registry trigger
    decommission = clm(deployment, "decommission", cluster_id, "--yes", "--follow")
    assert decommission.exit_code == 0, (decommission.output, decommission.exception)
    steps = progress(decommission)
    assert steps[0] == "Begin: decommission (decommission requested)"
    # The ingress controller's stacks (none here), then the cluster stack, in the decommission execution itself.
    ingress = steps.index("[decommission] IngressStacks: none left")
    assert steps.index("[decommission] Stack kube-1: DELETE_COMPLETE") > ingress, steps
    assert outcome(decommission).startswith("SUCCEEDED  execution ")
    assert deployment.registry.get(cluster_id).lifecycle_status == "decommissioned"
    deleted = clm(deployment, "registry", "delete", cluster_id, "--yes")
    assert deleted.exit_code == 0, (deleted.output, deleted.exception)
    assert deployment.registry.list_clusters() == []
