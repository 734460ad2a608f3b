"""Proof that CLM provisioned a cluster before a decommission cleans up (clm.stacks.provenance): its cluster stack
with CLM's ownership tags, alive or deleted (an interrupted decommission that deleted it goes on)."""

from __future__ import annotations

import boto3
import pytest

from clm.stacks.names import owned_tags
from clm.stacks.provenance import ClusterNotManaged, ensure_provisioned
from tests.unit.test_stacks_leftovers import CLUSTER

BODY = "Resources:\n  Handle:\n    Type: AWS::CloudFormation::WaitConditionHandle\n"
pytestmark = pytest.mark.filterwarnings("ignore:Tried to parse AWS")
OWNED = [{"Key": key, "Value": value} for key, value in owned_tags(CLUSTER.id).items()]


def test_a_live_cluster_stack_with_clms_tags_proves_it(aws: boto3.Session) -> None:
    cfn = aws.client("cloudformation")
    cfn.create_stack(StackName="kube-1", TemplateBody=BODY, Tags=OWNED)
    assert ensure_provisioned(cfn, CLUSTER) == "stack kube-1 exists"


def test_a_deleted_cluster_stack_with_clms_tags_proves_it(aws: boto3.Session) -> None:
    cfn = aws.client("cloudformation")
    cfn.create_stack(StackName="kube-1", TemplateBody=BODY, Tags=[{"Key": "team", "Value": "b"}])
    cfn.delete_stack(StackName="kube-1")  # another team's stack of the name, deleted: no proof
    cfn.create_stack(StackName="kube-1", TemplateBody=BODY, Tags=OWNED)
    cfn.delete_stack(StackName="kube-1")
    assert ensure_provisioned(cfn, CLUSTER) == "stack kube-1 deleted"


@pytest.mark.parametrize(
    ("tags", "deleted", "reason"),
    [
        (
            None,
            False,
            "no stack kube-1 tagged kubernetes.io/cluster/aws:123456789012:eu-central-1:kube-1=owned, "
            "clm:managed-by=clm exists or was deleted",
        ),
        ([{"Key": "team", "Value": "b"}], False, "stack kube-1 is not CLM's (it lacks kubernetes.io/cluster/"),
        ([{"Key": "team", "Value": "b"}], True, "no stack kube-1 tagged"),
        (OWNED[:1], False, "stack kube-1 is not CLM's (it lacks"),
    ],
)
def test_without_an_owned_cluster_stack_nothing_is_proved(
    aws: boto3.Session, tags: list[dict[str, str]] | None, deleted: bool, reason: str
) -> None:
    cfn = aws.client("cloudformation")
    if tags is not None:
        cfn.create_stack(StackName="kube-1", TemplateBody=BODY, Tags=tags)
        if deleted:
            cfn.delete_stack(StackName="kube-1")
    with pytest.raises(ClusterNotManaged, match=f"cluster {CLUSTER.id}: nothing cleaned up: ") as refused:
        ensure_provisioned(cfn, CLUSTER)
    assert reason in str(refused.value)
