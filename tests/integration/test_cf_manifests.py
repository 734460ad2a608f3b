"""cluster/cf-manifests/ and cf-deletions.yaml on the sandbox with IAM enforced, as CLM's applyCFManifests and
CFDeletions (provisioner/clusterpy.go; provisioner/aws.go applyCFManifest): an extra stack (a role under CLM's path
with its permissions boundary) is created as its Metadata.StackName names it, after the cluster stack and before the
node-pool stacks, with the cluster's tags and termination protection, shown by `clm plan` first; a later
configuration whose cf-deletions.yaml names it deletes it after the manifests; decommission deletes the others.

Attacks of a configuration writer, each refused with the run's problem naming it and nothing changed: a cf-deletion
of a stack not made for the cluster (another cluster's, an account's own), a StackName of another cluster's existing
stack, and a template making a role without CLM's permissions boundary (IAM refuses CloudFormation's CreateRole)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from click.testing import CliRunner
from kubernetes import client as k8s

from clm.cli.main import cli
from clm.stacks.extra import extra_stack_tags
from clm.stacks.names import owned_tags
from tests.integration.deployment import Deployment, provisioned, register_example_cluster, the_run

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

PREFIX = "config/cluster/cf-manifests/"
OTHER_ID = "aws:123456789012:eu-central-1:kube-2"
ROLE = """Metadata:
  StackName: {name}
  Tags: {{team: platform}}
Resources:
  Role:
    Type: AWS::IAM::Role
    Properties:
      RoleName: "{{{{ cluster.local_id }}}}-{name}"
      Path: !ImportValue clm-cluster-role-path
      {boundary}
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement:
        - {{Effect: Allow, Principal: {{Service: ec2.amazonaws.com}}, Action: sts:AssumeRole}}
"""
BOUNDED = "PermissionsBoundary: !ImportValue clm-cluster-role-boundary"


def upload(deployment: Deployment, files: dict[str, str | None]) -> list[dict[str, Any]]:
    """Put (or, for None, delete) files of cluster/cf-manifests/: the runs the change starts, once settled."""
    known = len(deployment.executions(deployment.provision))
    s3, bucket = deployment.session.client("s3"), deployment.outputs["ConfigBucketName"]
    for name, text in files.items():
        if text is None:
            s3.delete_object(Bucket=bucket, Key=PREFIX + name)
        else:
            s3.put_object(Bucket=bucket, Key=PREFIX + name, Body=text.encode())
    deployment.settle()
    return [
        deployment.sfn.describe_execution(executionArn=e["executionArn"])
        for e in deployment.executions(deployment.provision)[known:]
    ]


def set_items(deployment: Deployment, **items: str | None) -> list[dict[str, Any]]:
    """Set (or, for None, remove) config items of the cluster: the runs the change starts, once settled."""
    cluster = deployment.registry.get(deployment.cluster_id)
    known = len(deployment.executions(deployment.provision))
    changed = {k: v for k, v in {**cluster.config_items, **items}.items() if v is not None}
    deployment.registry.put(dataclasses.replace(cluster, config_items=changed))
    return deployment.settle(known)


def stack(cfn: Any, name: str) -> dict[str, Any] | None:
    found = [
        s for s in cfn.describe_stacks()["Stacks"] if s["StackName"] == name and s["StackStatus"] != "DELETE_COMPLETE"
    ]
    return found[0] if found else None


def plan(deployment: Deployment) -> list[dict[str, Any]]:
    table, config = deployment.outputs["RegistryTableName"], deployment.outputs["ConfigSourceUri"]
    result = CliRunner().invoke(
        cli, ["--table", table, "-o", "json", "plan", deployment.cluster_id, "--config", config]
    )
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)["stacks"]


def last_problem(deployment: Deployment) -> str:
    return deployment.registry.get(deployment.cluster_id).status.problems[-1].title


def test_extra_stacks_follow_the_cluster_stack_are_deleted_by_cf_deletions_and_by_decommission(
    deployment: Deployment, nodes: Any, kube_api: k8s.ApiClient
) -> None:
    upload(deployment, {"10-extra.yaml": ROLE.format(name="kube-1-extra", boundary=BOUNDED),
                        "20-old.yaml": ROLE.format(name="kube-1-old", boundary=BOUNDED)})  # fmt: skip
    register_example_cluster(deployment)
    provisioned(deployment, nodes, kube_api)
    cfn, iam = deployment.session.client("cloudformation"), deployment.session.client("iam")
    extra, cluster_stack = stack(cfn, "kube-1-extra"), stack(cfn, "kube-1")
    assert extra and cluster_stack and stack(cfn, "kube-1-old")
    pools = [s for s in cfn.describe_stacks()["Stacks"] if s["StackName"].startswith("nodepool-")]
    assert cluster_stack["CreationTime"] < extra["CreationTime"] < min(s["CreationTime"] for s in pools)
    tags = {t["Key"]: t["Value"] for t in extra["Tags"]}
    assert tags == {"team": "platform", **extra_stack_tags(deployment.cluster_id)}
    assert extra["EnableTerminationProtection"]
    role = iam.get_role(RoleName="kube-1-kube-1-extra")["Role"]
    assert role["Path"] == "/clm-cluster/"
    assert "ClusterStackRoleBoundary" in role["PermissionsBoundary"]["PermissionsBoundaryArn"]
    assert [(s["stack_name"], s["action"]) for s in plan(deployment)[:3]] == [
        ("kube-1", "no change"),
        ("kube-1-extra", "no change"),
        ("kube-1-old", "no change"),
    ]

    set_items(deployment, cluster_update_block="planning")  # no run until the plan is read
    upload(deployment, {"20-old.yaml": None, "cf-deletions.yaml": "post_apply:\n- stackName: kube-1-old\n"})
    planned = [(s["stack_name"], s["action"], s["file"]) for s in plan(deployment)]
    assert ("kube-1-old", "delete", "cluster/cf-manifests/cf-deletions.yaml") in planned, planned
    set_items(deployment, cluster_update_block=None)  # held by the new configuration's rollout: an operator's run
    known = len(deployment.executions(deployment.provision))
    start = {"cluster_id": deployment.cluster_id, "reason": "test", "override_rollout": True}
    deployment.sfn.start_execution(stateMachineArn=deployment.provision, input=json.dumps(start))
    run = the_run(deployment.settle(known))
    assert stack(cfn, "kube-1-old") is None and stack(cfn, "kube-1-extra")
    states = deployment.states(run["executionArn"])
    assert states.index("CFDeletions") > states.index("ApplyPhase")  # post_apply: after the manifests

    cluster = deployment.registry.get(deployment.cluster_id)
    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(dataclasses.replace(cluster, lifecycle_status="decommission-requested"))
    the_run(deployment.settle(known))
    assert [s["StackName"] for s in cfn.describe_stacks()["Stacks"] if s["StackStatus"] != "DELETE_COMPLETE"] == ["Clm"]


def test_cf_deletions_and_stack_names_reach_only_the_clusters_own_extra_stacks(
    deployment: Deployment, nodes: Any, kube_api: k8s.ApiClient
) -> None:
    register_example_cluster(deployment)
    provisioned(deployment, nodes, kube_api)
    cfn = deployment.session.client("cloudformation")
    body = "Resources:\n  Nothing:\n    Type: AWS::CloudFormation::WaitConditionHandle\n"
    foreign = {
        "kube-2-extra": extra_stack_tags(OTHER_ID),  # another cluster's extra stack
        "kube-1-by-hand": owned_tags(deployment.cluster_id),  # tagged with the cluster, not made from cf-manifests
        "team-data": {"team": "data"},  # the account's own
    }
    for name, tags in foreign.items():
        cfn.create_stack(StackName=name, TemplateBody=body, Tags=[{"Key": k, "Value": v} for k, v in tags.items()])
    for name in foreign:
        runs = upload(deployment, {"cf-deletions.yaml": f"pre_apply:\n- stackName: {name}\n"})
        assert [r["status"] for r in runs] == ["FAILED"], [(r["status"], r.get("error")) for r in runs]
        assert f"stack {name}: the stack of this name is not CLM's stack of the cluster" in last_problem(deployment)
        assert stack(cfn, name) is not None
    manifest = ROLE.format(name="kube-2-extra", boundary=BOUNDED)
    runs = upload(deployment, {"cf-deletions.yaml": None, "10-x.yaml": manifest})
    assert [r["status"] for r in runs] == ["FAILED"]
    assert "stack kube-2-extra: the stack of this name is not CLM's stack of the cluster" in last_problem(deployment)
    assert cfn.get_template(StackName="kube-2-extra")["TemplateBody"] == body


@pytest.mark.iam_refusals  # CloudFormation's CreateRole, refused by IAM, is the point
def test_an_extra_stack_cannot_make_a_role_beyond_clms_boundary(deployment: Deployment) -> None:
    upload(deployment, {"10-escalation.yaml": ROLE.format(name="kube-1-escalation", boundary="")})
    register_example_cluster(deployment)
    runs = deployment.settle(0)
    assert [r["status"] for r in runs] == ["FAILED"], [(r["status"], r.get("error")) for r in runs]
    problem = last_problem(deployment)
    assert "iam:CreateRole on resource: arn:aws:iam::123456789012:role/clm-cluster/kube-1-kube-1-escalation" in problem
    assert "is not authorized to perform" in problem, problem
    roles = [r["RoleName"] for r in deployment.session.client("iam").list_roles()["Roles"]]
    assert "kube-1-kube-1-escalation" not in roles
