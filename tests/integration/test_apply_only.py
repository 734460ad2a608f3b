"""Apply-only on the sandbox with IAM enforced, as CLM's --apply-only (config/config.go; provisioner/clusterpy.go
provisionNodePoolGroup skips updater.Update): with the cluster's config item `apply_only: "true"`, a new worker AMI
updates the node-pool stack (the group now launches the new image) and no node is replaced, no roll workflow starts;
the run counts the 3 outdated nodes it left, says so in `--follow`'s view, and records a problem instead of the version,
so `clm status` shows the cluster behind (current != next, the problem) rather than up to date; a second trigger of the
same version is skipped. With the item "false" the next run rolls the 3 nodes and records the version."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from click.testing import CliRunner
from kubernetes import client as k8s

from clm.cli.main import cli
from clm.workflow.apply_only import PROBLEM_TYPE
from tests.integration.deployment import (
    Deployment,
    instances,
    provisioned,
    register_example_cluster,
    the_run,
    upload_new_ami,
)
from tests.integration.test_cli_follow import switch_rules

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]
OVERRIDE = ["--override-rollout"]  # the event rules are off: no reconcile starts the new configuration's rollout


def set_item(deployment: Deployment, value: str) -> list[dict[str, Any]]:
    """The cluster's config item apply_only set to `value`: the runs it starts, once settled."""
    cluster = deployment.registry.get(deployment.cluster_id)
    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(dataclasses.replace(cluster, config_items={**cluster.config_items, "apply_only": value}))
    return deployment.settle(known)


def status(deployment: Deployment) -> dict[str, Any]:
    table = deployment.outputs["RegistryTableName"]
    result = CliRunner().invoke(cli, ["--table", table, "-o", "json", "status", deployment.cluster_id])
    assert result.exit_code == 0, (result.output, result.exception)
    [row] = json.loads(result.stdout)
    return row


def follow(deployment: Deployment) -> list[str]:
    """`clm provision ID --follow`: the lines it printed for the run's steps."""
    table = deployment.outputs["RegistryTableName"]
    result = CliRunner().invoke(cli, ["--table", table, "provision", deployment.cluster_id, "--follow", *OVERRIDE])
    assert result.exit_code == 0, (result.output, result.exception)
    return [line[10:] for line in result.output.splitlines() if line[:2].isdigit() and line[2] == ":"]


def test_apply_only_updates_stacks_rolls_no_node_and_does_not_record_the_nodes_as_up_to_date(
    deployment: Deployment, nodes: Any, kube_api: k8s.ApiClient
) -> None:
    register_example_cluster(deployment)
    before = provisioned(deployment, nodes, kube_api)
    the_run(set_item(deployment, "true"))  # nothing outdated yet: the version is recorded
    assert deployment.registry.get(deployment.cluster_id).status.problems == []
    rolls = len(deployment.executions(deployment.roll_node_pool))
    for bus in ("default", deployment.outputs["EventBusName"]):  # the next runs start only from the CLI
        switch_rules(deployment.session, bus, enabled=False)
    upload_new_ami(deployment)

    steps = follow(deployment)
    assert steps[0].startswith("Begin: provision (") and steps[0].endswith(
        "(apply-only: stacks and manifests, no node pool rolled))"
    ), steps
    assert "Node pools: none rolled (apply-only)" in steps, steps
    assert "Apply-only: no node pool rolled; outdated nodes left: default-worker (3)" in steps, steps
    assert steps[-1].startswith("Succeed: version ") and steps[-1].endswith("(apply-only), 3 outdated node(s) left")
    assert instances(deployment.session) == before  # no node replaced
    assert len(deployment.executions(deployment.roll_node_pool)) == rolls  # no roll started
    [group] = deployment.session.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    template = group["LaunchTemplate"]
    [version] = deployment.session.client("ec2").describe_launch_template_versions(
        LaunchTemplateId=template["LaunchTemplateId"], Versions=[template["Version"]]
    )["LaunchTemplateVersions"]
    assert version["LaunchTemplateData"]["ImageId"] == "ami-0d2b8f9a562295d9c"  # the stack was updated

    cluster = deployment.registry.get(deployment.cluster_id)
    shown = status(deployment)
    assert shown["current_version"] != shown["next_version"] == cluster.status.next_version
    assert shown["last_problem"].startswith("apply-only: 3 outdated node(s) not rolled at version")
    assert cluster.status.problems[-1].type == PROBLEM_TYPE
    again = follow(deployment)
    assert again[0].startswith("Begin: skip (applied at ") and "in apply-only mode" in again[0], again

    latest = deployment.registry.get(deployment.cluster_id)  # no run starts (the rules are off): the operator's
    deployment.registry.put(dataclasses.replace(latest, config_items={**latest.config_items, "apply_only": "false"}))
    steps = follow(deployment)
    assert steps[-1].startswith("Succeed: cluster at version"), steps
    after = instances(deployment.session)
    assert len(after) == 3 and not after & before  # every node rolled
    rolled = deployment.registry.get(deployment.cluster_id).status
    assert rolled.next_version == "" and rolled.problems == []
    assert rolled.current_version not in ("", cluster.status.current_version)
