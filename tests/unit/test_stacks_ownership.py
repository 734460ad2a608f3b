"""CLM changes only stacks it owns: start and start_delete on moto's CloudFormation, with a stack of the name CLM
gives one of the cluster's stacks that someone else created (no tags, another cluster's, CLM's tag without the
cluster's), and the service role passed with every delete."""

from __future__ import annotations

from typing import Any

import pytest

from clm.stacks.delete import start_delete
from clm.stacks.deploy import start
from clm.stacks.errors import StackNotOwned
from clm.stacks.names import cluster_stack_tags
from clm.stacks.ownership import ensure_owned
from clm.stacks.spec import StackSpec, cluster_stack_spec, node_pool_stack_spec
from tests.unit.test_stacks_support import clients, example_cluster, moto_stack, render, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures

CLUSTER_ID = "aws:123456789012:eu-central-1:kube-1"
OWNER_TAG = f"kubernetes.io/cluster/{CLUSTER_ID}=owned"
FOREIGN_BODY = "Resources:\n  Data:\n    Type: AWS::SQS::Queue\n"
ROLE = "arn:aws:iam::123456789012:role/clm-cluster-stacks"


def foreign_stack(cfn: Any, name: str, tags: dict[str, str] | None = None) -> dict[str, Any]:
    """Create a stack as someone else would (termination protection on); its description."""
    api_tags = [{"Key": key, "Value": value} for key, value in (tags or {}).items()]
    cfn.create_stack(StackName=name, TemplateBody=FOREIGN_BODY, Tags=api_tags, EnableTerminationProtection=True)
    return observed(cfn, name)


def observed(cfn: Any, name: str) -> dict[str, Any]:
    """What must not change: status, tags, termination protection, template."""
    stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
    template = cfn.get_template(StackName=name)["TemplateBody"]
    return {key: stack.get(key) for key in ("StackStatus", "Tags", "EnableTerminationProtection")} | {
        "template": template
    }


def cluster_spec() -> StackSpec:
    return cluster_stack_spec(render(example_cluster("kube-1")))


@pytest.mark.parametrize(
    ("tags", "missing"),
    [
        ({}, f"{OWNER_TAG}, clm:managed-by=clm"),
        ({"kubernetes.io/cluster/other": "owned", "clm:managed-by": "clm"}, OWNER_TAG),  # another cluster's
        ({f"kubernetes.io/cluster/{CLUSTER_ID}": "owned"}, "clm:managed-by=clm"),  # not (yet) tagged for CLM
        ({f"kubernetes.io/cluster/{CLUSTER_ID}": "shared", "clm:managed-by": "clm"}, OWNER_TAG),
    ],
)
def test_update_of_a_stack_without_the_clusters_tags_is_refused_and_changes_nothing(clients, tags, missing):
    cfn = clients["cloudformation"]
    before = foreign_stack(cfn, "kube-1", tags)
    with pytest.raises(StackNotOwned) as raised:
        start(cfn, clients["s3"], cluster_spec(), role_arn=ROLE)
    assert str(raised.value) == (
        f"cluster {CLUSTER_ID}: stack kube-1: the stack of this name is not CLM's stack of the cluster (it lacks the "
        f"tags {missing}); CLM does not change it: rename the stack or the cluster's local_id, or tag the stack if "
        "it is the cluster's"
    )
    assert (raised.value.asl_name, raised.value.stack_name) == ("StackNotOwned", "kube-1")
    assert observed(cfn, "kube-1") == before


def test_termination_protection_of_a_foreign_stack_is_not_turned_on(clients):
    cfn = clients["cloudformation"]
    cfn.create_stack(StackName="kube-1", TemplateBody=FOREIGN_BODY)
    with pytest.raises(StackNotOwned):
        start(cfn, clients["s3"], cluster_spec())
    assert cfn.describe_stacks(StackName="kube-1")["Stacks"][0]["EnableTerminationProtection"] is False


def test_a_foreign_stack_rolled_back_under_a_node_pools_name_is_not_deleted(clients):
    cfn = clients["cloudformation"]
    spec = node_pool_stack_spec(render(example_cluster("kube-1")), "default-worker")
    before = foreign_stack(cfn, spec.name)
    moto_stack(spec.name).status = "ROLLBACK_COMPLETE"  # what CLM would delete and create again, were it CLM's
    with pytest.raises(StackNotOwned, match=f"stack {spec.name}: "):
        start(cfn, clients["s3"], spec)
    assert observed(cfn, spec.name) == {**before, "StackStatus": "ROLLBACK_COMPLETE"}


def test_delete_of_a_foreign_stack_is_refused_and_changes_nothing(clients):
    cfn = clients["cloudformation"]
    before = foreign_stack(cfn, "kube-1", {"kubernetes.io/cluster/other": "owned", "clm:managed-by": "clm"})
    with pytest.raises(StackNotOwned, match=f"cluster {CLUSTER_ID}: stack kube-1: .*lacks the tags {OWNER_TAG}\\)"):
        start_delete(cfn, "kube-1", CLUSTER_ID, ROLE)
    assert observed(cfn, "kube-1") == before


def test_delete_of_an_owned_stack_passes_the_service_role(clients):
    cfn = clients["cloudformation"]
    foreign_stack(cfn, "kube-1", cluster_stack_tags(CLUSTER_ID))  # tagged as CLM tags the cluster stack
    calls: list[tuple[str, dict]] = []
    cfn.meta.events.register(
        "provide-client-params.cloudformation", lambda model, params, **_: calls.append((model.name, dict(params)))
    )
    assert start_delete(cfn, "kube-1", CLUSTER_ID, ROLE).action == "delete_started"
    changes = [(name, params.get("RoleARN")) for name, params in calls if name != "DescribeStacks"]
    assert changes == [("UpdateTerminationProtection", None), ("DeleteStack", ROLE)]


def test_stacks_clm_creates_carry_the_tags_it_checks(clients):
    cfn = clients["cloudformation"]
    spec = cluster_spec()
    assert start(cfn, clients["s3"], spec).action == "created"
    ensure_owned(cfn.describe_stacks(StackName=spec.name)["Stacks"][0], CLUSTER_ID)
    assert start(cfn, clients["s3"], spec).action == "unchanged"
