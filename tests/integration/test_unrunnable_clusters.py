"""Clusters CLM cannot run, through the deployed workflows.

A cluster whose channel names no configuration: as CLM's controller takes such a cluster at every pass and records
the error on it (controller/cluster_list.go updatePriority, controller.go processCluster), its run records the problem
and ends without the lock or any stack; the schedule's reconcile lists the cluster as invalid, and starts such a run
whenever the cluster's last problem does not say so (none while it does).

A cluster of a provider CLM does not provision (CLM's config/config.go `--provider`: zalando-aws or zalando-eks),
written straight into the table: its run records why on the item; reconcile lists it as invalid; nothing is made."""

from __future__ import annotations

import dataclasses
import json

import pytest

from clm.registry.clusters_yaml import load_clusters
from tests.integration.deployment import ROOT, Deployment

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]


def scheduled_reconcile(deployment: Deployment) -> dict:
    """Start reconcile as the schedule does, wait for everything it starts, return its output."""
    sfn = deployment.sfn
    arn = sfn.start_execution(
        stateMachineArn=deployment.outputs["ReconcileStateMachineArn"], input=json.dumps({"reason": "schedule"})
    )["executionArn"]
    deployment.settle()
    reconciled = sfn.describe_execution(executionArn=arn)
    assert reconciled["status"] == "SUCCEEDED", reconciled.get("error")
    return json.loads(reconciled["output"])


def test_an_unresolvable_channel_is_a_problem_on_the_cluster_recorded_once(deployment: Deployment) -> None:
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster = dataclasses.replace(cluster, channel="gamma")  # the config bucket has no config/gamma/
    deployment.registry.put(cluster)  # the registry change starts reconcile

    run = deployment.only_run(0)  # the registry change's run
    assert run["status"] == "SUCCEEDED"
    [problem] = deployment.registry.get(cluster.id).status.problems
    assert problem.title == "configuration: cluster aws:123456789012:eu-central-1:kube-1 (channel 'gamma'): s3://" + (
        f"{deployment.outputs['ConfigBucketName']}/config/gamma/cluster/: no objects: channel 'gamma' does not exist"
    )
    assert problem.instance == run["executionArn"]
    assert deployment.registry.lock_holder(cluster.id) is None
    stacks = [s["StackName"] for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]]
    assert cluster.local_id not in stacks and not [name for name in stacks if name.startswith("nodepool-")], stacks

    known = len(deployment.executions(deployment.provision))
    output = scheduled_reconcile(deployment)
    assert output["started"]["count"] == 0  # its last problem says so
    assert [entry["cluster_id"] for entry in output["invalid"]] == [cluster.id]
    assert len(deployment.executions(deployment.provision)) == known
    assert deployment.registry.get(cluster.id).status.problems == [problem]

    deployment.registry.update_status(cluster.id, lambda status: status.problems.clear())  # starts nothing itself
    output = scheduled_reconcile(deployment)
    assert output["started"]["ids"] == [cluster.id]
    [run] = deployment.executions(deployment.provision)[known:]
    run_input = json.loads(deployment.sfn.describe_execution(executionArn=run["executionArn"])["input"])
    assert run_input["reason"] == "configuration cannot be resolved"
    assert [p.title for p in deployment.registry.get(cluster.id).status.problems] == [problem.title]
    assert deployment.registry.lock_holder(cluster.id) is None


def test_a_provider_clm_does_not_provision_is_a_problem_on_that_item(deployment: Deployment) -> None:
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    blocked = {**cluster.config_items, "cluster_update_block": "until the provider is changed"}
    deployment.registry.put(dataclasses.replace(cluster, config_items=blocked))
    deployment.settle(known=0)
    known = len(deployment.executions(deployment.provision))
    table = deployment.outputs["RegistryTableName"]
    deployment.session.client("dynamodb").update_item(  # as a table writer can; clm registry set would refuse it
        TableName=table,
        Key={"id": {"S": cluster.id}},
        UpdateExpression="SET #spec.#provider = :gke REMOVE #spec.#items.#block",
        ExpressionAttributeNames={
            "#spec": "spec",
            "#provider": "provider",
            "#items": "config_items",
            "#block": "cluster_update_block",
        },
        ExpressionAttributeValues={":gke": {"S": "zalando-gke"}},
    )
    run = deployment.only_run(known)  # the spec change's run
    assert run["status"] == "SUCCEEDED"
    item = deployment.session.client("dynamodb").get_item(TableName=table, Key={"id": {"S": cluster.id}})["Item"]
    [problem] = item["status"]["M"]["problems"]["L"]
    assert "provider: 'zalando-gke' is not provisioned by CLM" in problem["M"]["title"]["S"]
    assert "lock" not in item
    output = scheduled_reconcile(deployment)
    assert [entry["cluster_id"] for entry in output["invalid"]] == [cluster.id]
    assert "zalando-gke" in output["invalid"][0]["error"]
    stacks = [s["StackName"] for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]]
    assert cluster.local_id not in stacks
