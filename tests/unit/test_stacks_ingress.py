"""Decommission deletes the stacks kube-ingress-aws-controller made for the cluster (clm.stacks.ingress), on moto's
CloudFormation with the sandbox's patches: only stacks tagged with the cluster and the controller, with the service
role; other stacks of the cluster are left and named; a failed deletion is an error naming the stack."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clm.model import Cluster
from clm.stacks.errors import StackFailed, StackNotOwned
from clm.stacks.ingress import sweep_ingress_stacks
from clm.stacks.names import cluster_stack_tags, ingress_tags
from clm.stacks.ownership import ensure_ingress
from tests.unit.test_stacks_support import clients, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures

CLUSTER_ID = "aws:123456789012:eu-central-1:kube-1"
OTHER_ID = "aws:123456789012:eu-central-1:kube-2"
CLUSTER = Cluster(CLUSTER_ID, "kube-1", "aws:123456789012", "eu-central-1", "zalando-aws", alias="kube-one")
EKS = Cluster(CLUSTER_ID, "kube-1", "aws:123456789012", "eu-central-1", "zalando-eks", alias="kube-one")
BODY = "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n"
ROLE_BODY = """
Resources:
  Role:
    Type: AWS::IAM::Role
    Properties:
      RoleName: ingress-role
      AssumeRolePolicyDocument:
        Statement: [{Effect: Allow, Principal: {Service: ec2.amazonaws.com}, Action: sts:AssumeRole}]
"""
# What the SQS queue's delete handler calls (CloudFormation's schema), judged against the role by the sandbox.
DELETE_QUEUES = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Resource": "*",
                 "Action": ["sqs:DeleteQueue", "sqs:GetQueueAttributes"]}]}  # fmt: skip
TRUST = {"Statement": [{"Effect": "Allow", "Principal": {"Service": "cloudformation.amazonaws.com"},
                        "Action": "sts:AssumeRole"}]}  # fmt: skip


def stack(cfn: Any, name: str, tags: dict[str, str], protected: bool = False, body: str = BODY) -> None:
    api_tags = [{"Key": key, "Value": value} for key, value in tags.items()]
    cfn.create_stack(StackName=name, TemplateBody=body, Tags=api_tags, EnableTerminationProtection=protected)


def live(cfn: Any) -> list[str]:
    return sorted(s["StackName"] for s in cfn.describe_stacks()["Stacks"] if s["StackStatus"] != "DELETE_COMPLETE")


def calls_of(cfn: Any) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    cfn.meta.events.register(
        "provide-client-params.cloudformation", lambda model, params, **_: calls.append((model.name, dict(params)))
    )
    return calls


def test_the_controllers_stacks_of_the_cluster_are_deleted_with_the_role_and_other_stacks_left(clients):
    cfn, iam = clients["cloudformation"], clients["iam"]
    role = iam.create_role(RoleName="cfn", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    iam.put_role_policy(RoleName="cfn", PolicyName="delete-queues", PolicyDocument=json.dumps(DELETE_QUEUES))
    stack(cfn, "kube-ing-a", ingress_tags(CLUSTER_ID), protected=True)  # the controller's termination protection
    stack(cfn, "kube-ing-b", ingress_tags(CLUSTER_ID))
    stack(cfn, "kube-ing-other", ingress_tags(OTHER_ID))  # another cluster's
    stack(cfn, "team-data", {f"kubernetes.io/cluster/{CLUSTER_ID}": "owned"})  # the cluster's tag only
    stack(cfn, "kube-1", cluster_stack_tags(CLUSTER_ID))  # CLM's own: deleted by its own step
    calls = calls_of(cfn)

    first = sweep_ingress_stacks(cfn, CLUSTER, role, check=False)
    assert first.to_dict() == {"deleting": ["kube-ing-a", "kube-ing-b"], "left": ["team-data"], "done": False}
    changes = [
        (name, params["StackName"].split(":stack/")[-1].split("/")[0], params.get("RoleARN"))
        for name, params in calls
        if "Describe" not in name
    ]
    assert changes == [
        ("UpdateTerminationProtection", "kube-ing-a", None),
        ("DeleteStack", "kube-ing-a", role),
        ("DeleteStack", "kube-ing-b", role),
    ]
    assert live(cfn) == ["clm-exports", "kube-1", "kube-ing-other", "team-data"]
    assert sweep_ingress_stacks(cfn, CLUSTER, role, check=True).to_dict() == {
        "deleting": [],
        "left": ["team-data"],
        "done": True,
    }


def test_a_failed_deletion_is_an_error_naming_the_stack_and_its_resource(clients):
    cfn = clients["cloudformation"]
    role = clients["iam"].create_role(RoleName="cfn", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    stack(cfn, "kube-ing-a", ingress_tags(CLUSTER_ID), body=ROLE_BODY)
    # The role allows nothing: the IAM role's delete handler is refused, the stack is DELETE_FAILED.
    assert sweep_ingress_stacks(cfn, CLUSTER, role, check=False).deleting == ["kube-ing-a"]
    assert cfn.describe_stacks(StackName="kube-ing-a")["Stacks"][0]["StackStatus"] == "DELETE_FAILED"
    with pytest.raises(StackFailed) as failed:
        sweep_ingress_stacks(cfn, CLUSTER, role, check=True)
    message = str(failed.value)
    assert message.startswith(f"cluster {CLUSTER_ID}: stack kube-ing-a: DELETE_FAILED: resource Role (AWS::IAM::Role)")
    assert "is not authorized to perform: iam:DeleteRole" in message


@pytest.mark.parametrize(
    "tags",
    [
        {f"kubernetes.io/cluster/{CLUSTER_ID}": "owned"},
        {"kubernetes:application": "kube-ingress-aws-controller"},
        ingress_tags(OTHER_ID),
    ],
)
def test_only_a_stack_with_both_tags_of_the_cluster_is_the_controllers(tags):
    described = {"StackName": "s", "Tags": [{"Key": key, "Value": value} for key, value in tags.items()]}
    with pytest.raises(StackNotOwned, match="not an ingress controller's stack of the cluster"):
        ensure_ingress(described, CLUSTER_ID, CLUSTER_ID)


def test_an_eks_clusters_controller_stacks_are_those_tagged_with_its_alias(clients):
    """CLM's listClusterStacks (provisioner/clusterpy.go) lists `kubernetes.io/cluster/<Name()>`: a zalando-eks
    cluster's alias (api/cluster.go Name()); a controller's stack tagged with its id is not its."""
    cfn, iam = clients["cloudformation"], clients["iam"]
    role = iam.create_role(RoleName="cfn", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    iam.put_role_policy(RoleName="cfn", PolicyName="delete-queues", PolicyDocument=json.dumps(DELETE_QUEUES))
    stack(cfn, "kube-ing-alias", ingress_tags("kube-one"))
    stack(cfn, "kube-ing-id", ingress_tags(CLUSTER_ID))
    assert sweep_ingress_stacks(cfn, EKS, role, check=False).deleting == ["kube-ing-alias"]
    assert "kube-ing-id" in live(cfn)
