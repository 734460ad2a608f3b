"""A registry writer cannot make CLM act for a cluster the hub may not or cannot reach (IAM enforced as on AWS): a
cluster naming an account the deployment does not allow (clm:targetAccounts, default: its own), or another region of
the hub's account where no target stack is deployed (the sandbox refuses the AssumeRole of a role that does not
exist), is refused by its run with a problem naming the cluster, its account and region, and the fix, before any
other AWS call for it: no stack, no rendering, no lock; its decommission deletes nothing, not even what carries its
tags here; reconcile starts no run for the account not allowed; every other item of the registry stays as it was.
The examples and Zalando's samples import in the sandbox's account and region."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from clm.cli.main import cli
from clm.registry.clusters_yaml import dump_clusters, load_clusters
from clm.stacks.names import owned_tags
from tests.corpus_samples import sample_clusters
from tests.integration.deployment import ROOT, Deployment
from tests.unit.test_workflow_placement import elsewhere, target_refusal

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

NO_TARGET_STACK = (
    "the hub cannot assume arn:aws:iam::123456789012:role/clm-target-us-east-1-run (AccessDenied): deploy the target "
    "stack there: `cdk deploy ClmTarget -c clm:hub=<hub account>:<hub region>`"
)
REGIONS = ("eu-central-1", "us-east-1")
EXAMPLES = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())


def observed(deployment: Deployment) -> dict[str, Any]:
    """What a run could write: every stack (CLM's own too) in the sandbox's region and the foreign one, the
    renderings, the network interfaces, the registry's items (status, lock and all)."""
    session = deployment.session
    stacks = {
        region: [
            (s["StackName"], s["StackStatus"], s.get("LastUpdatedTime"))
            for s in session.client("cloudformation", region_name=region).describe_stacks()["Stacks"]
        ]
        for region in REGIONS
    }
    artefacts = session.client("s3").list_objects_v2(Bucket=deployment.outputs["ArtefactBucketName"])
    items = session.client("dynamodb").scan(TableName=deployment.outputs["RegistryTableName"], ConsistentRead=True)
    return {
        "stacks": stacks,
        "artefacts": sorted(o["Key"] for o in artefacts.get("Contents", [])),
        "interfaces": sorted(
            i["NetworkInterfaceId"] for i in session.client("ec2").describe_network_interfaces()["NetworkInterfaces"]
        ),
        "items": {item["id"]["S"]: item for item in items["Items"]},
    }


def runs_of(deployment: Deployment, known: int, count: int, timeout: float = 120.0) -> list[dict[str, Any]]:
    """The `count` provision executions started after the first `known`, once none runs, described."""
    deadline = time.monotonic() + timeout
    while True:
        runs = deployment.settle(known)
        if len(runs) >= count or time.monotonic() > deadline:
            return runs
        time.sleep(0.2)


def refused_runs(runs: list[dict[str, Any]]) -> dict[str, str]:
    """Each run's cluster -> the reason of its plan; every run succeeded with a skip."""
    assert [e["status"] for e in runs] == ["SUCCEEDED"] * len(runs), [e.get("error") for e in runs]
    plans = [json.loads(e["output"])["plan"] for e in runs]
    assert {plan["action"] for plan in plans} == {"skip"}
    return {plan["cluster_id"]: plan["reason"] for plan in plans}


@pytest.mark.iam_refusals  # the run function's AssumeRole of a target role that does not exist
def test_clusters_of_an_account_not_allowed_or_without_a_target_stack_are_refused_by_their_runs_and_reconcile(
    deployment: Deployment,
) -> None:
    bystander = dataclasses.replace(EXAMPLES[1], lifecycle_status="decommissioned")  # its registration's run skips
    deployment.registry.put(bystander)
    deployment.settle(0)
    account = elsewhere(EXAMPLES[0], account="999999999999")
    region = elsewhere(EXAMPLES[0], region="us-east-1")
    titles = {account.id: target_refusal(account), region.id: target_refusal(region, NO_TARGET_STACK)}
    # What a CLM without the check would have made here for the cluster of the other account: its cluster stack and
    # an interface its VPC CNI leaked. Its decommission must leave them.
    session = deployment.session
    session.client("cloudformation").create_stack(
        StackName=account.local_id,
        TemplateBody="Resources:\n  Q:\n    Type: AWS::SQS::Queue\n",
        Tags=[{"Key": key, "Value": value} for key, value in owned_tags(account.id).items()],
    )
    ec2 = session.client("ec2")
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    tags = [{"Key": "cluster.k8s.amazonaws.com/name", "Value": account.id}]
    ec2.create_network_interface(
        SubnetId=subnet, TagSpecifications=[{"ResourceType": "network-interface", "Tags": tags}]
    )
    before = observed(deployment)

    known = len(deployment.executions(deployment.provision))
    for cluster in (account, region):
        deployment.registry.put(cluster)
    assert refused_runs(runs_of(deployment, known, 2)) == titles
    for cluster in (account, region):
        refused = deployment.registry.get(cluster.id)
        assert [p.title for p in refused.status.problems] == [titles[cluster.id]]
        assert (refused.status.next_version, refused.lifecycle_status) == ("", "requested")
        assert deployment.registry.lock_holder(cluster.id) is None
    after = observed(deployment)
    assert {key: after[key] for key in ("stacks", "artefacts", "interfaces")} == {
        key: before[key] for key in ("stacks", "artefacts", "interfaces")
    }
    assert after["items"][bystander.id] == before["items"][bystander.id]

    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(dataclasses.replace(account, lifecycle_status="decommission-requested"))
    assert refused_runs(runs_of(deployment, known, 1)) == {account.id: titles[account.id]}
    assert observed(deployment)["stacks"] == before["stacks"]
    assert observed(deployment)["interfaces"] == before["interfaces"]
    assert deployment.registry.get(account.id).lifecycle_status == "decommission-requested"

    # The schedule: reconcile names the account not allowed and starts no run for it (its problem is recorded once,
    # by its run); the hub's own account is allowed, so the other's run is started and refused again.
    items = observed(deployment)["items"]
    known = len(deployment.executions(deployment.provision))
    sfn = deployment.sfn
    arn = sfn.start_execution(
        stateMachineArn=deployment.outputs["ReconcileStateMachineArn"], input=json.dumps({"reason": "schedule"})
    )["executionArn"]
    deployment.settle()
    reconciled = sfn.describe_execution(executionArn=arn)
    assert reconciled["status"] == "SUCCEEDED", reconciled.get("error")
    output = json.loads(reconciled["output"])
    assert {entry["cluster_id"] for entry in output["foreign"]} == {account.id}
    assert output["started"]["ids"] == [region.id]
    assert len(deployment.executions(deployment.provision)) == known + 1
    after = observed(deployment)["items"]
    assert {key: after[key] for key in after if key != region.id} == {
        key: items[key] for key in items if key != region.id
    }
    problems = deployment.registry.get(region.id).status.problems
    assert [p.title for p in problems] == [titles[region.id]] * 2  # one per run
    assert observed(deployment)["stacks"] == before["stacks"]


def test_the_examples_and_zalandos_samples_import_in_the_sandbox(deployment: Deployment, tmp_path: Path) -> None:
    samples = tmp_path / "samples.yaml"
    samples.write_text(dump_clusters(list(sample_clusters(deployment.session.client("ec2")).values())))
    table = deployment.outputs["RegistryTableName"]
    for path in (ROOT / "examples" / "clusters.yaml", samples):
        result = CliRunner().invoke(
            cli, ["--table", table, "-o", "json", "registry", "import", "--dry-run", str(path)], catch_exceptions=True
        )
        assert result.exit_code == 0, (result.output, result.exception)
        assert [row["change"] for row in json.loads(result.stdout)] == ["new", "new"]
