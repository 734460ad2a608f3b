"""The config item `etcd_stack_name` (provisioner/clusterpy.go createOrUpdateEtcdStack: CLM's etcd stack is
`etcd-cluster-etcd` unless the cluster names another): the stack spec takes it; a name outside `etcd-cluster-*`
fails the render naming the cluster and the item, before any AWS call; and the stacks function's etcd grant (read and
set a stack policy) is decided by the sandbox's IAM evaluator on the names it covers and no other stack."""

from __future__ import annotations

import dataclasses
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from constructs import Construct

from clm.errors import RenderError
from clm.render.inputs import RenderInputs
from clm.render.node_files import PlannedFiles
from clm.render.renderer import Renderer
from clm.stacks.etcd import etcd_stack_spec
from clm_sandbox.iam.policy import Policy, Request, evaluate
from infra.etcd_permissions import grant_etcd_stack_policy
from infra.grantee import RoleGrants
from tests.unit.test_etcd_stack import etcd_tree

STACKS = "arn:aws:cloudformation:eu-central-1:123456789012:stack/{name}/1a2b3c"


def _with_item(cluster: Any, value: str | None) -> Any:
    items = {k: v for k, v in cluster.config_items.items() if k != "etcd_stack_name"}
    return dataclasses.replace(cluster, config_items=items if value is None else {**items, "etcd_stack_name": value})


def test_the_etcd_stack_is_named_by_the_item_else_clms_name(example_tree, example_clusters) -> None:
    tree, inputs = etcd_tree(example_tree), RenderInputs(etcd_store=PlannedFiles("b"))
    for value, name in [(None, "etcd-cluster-etcd"), ("etcd-cluster-kube-2", "etcd-cluster-kube-2")]:
        rendered = Renderer(tree, inputs).render(_with_item(example_clusters[0], value))
        assert etcd_stack_spec(rendered).name == name


@pytest.mark.parametrize("value", ["kube-1", "Clm", "etcd-cluster-", "etcd-cluster-a/b", "etcd-cluster-" + "a" * 116])
def test_a_name_outside_etcd_cluster_is_refused_at_render(example_tree, example_clusters, value: str) -> None:
    """A registry writer pointing the etcd stack at a cluster stack or CLM's own: refused before any AWS call."""
    inputs = RenderInputs(etcd_store=PlannedFiles("b"))
    with pytest.raises(RenderError, match=r"config item etcd_stack_name: .* starting with etcd-cluster-") as error:
        Renderer(etcd_tree(example_tree), inputs).render(_with_item(example_clusters[0], value))
    assert error.value.cluster_id == example_clusters[0].id


class _Function(RoleGrants, Construct):
    def __init__(self, scope: Construct, name: str):
        super().__init__(scope, name)
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))


def _resolved(value: Any) -> Any:
    """A synthesized value with `Fn::Join` and the partition's `Ref` resolved (`aws`)."""
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(map(str, _resolved(parts)))
    if isinstance(value, dict) and value.get("Ref") == "AWS::Partition":
        return "aws"
    if isinstance(value, dict):
        return {key: _resolved(item) for key, item in value.items()}
    return [_resolved(item) for item in value] if isinstance(value, list) else value


def _etcd_grant() -> Policy:
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=cdk.Environment(account="123456789012", region="eu-central-1"))
    function = _Function(stack, "Stacks")
    grant_etcd_stack_policy(function)
    template = app.synth().get_stack_by_name("S").template
    [policy] = [r for r in template["Resources"].values() if r["Type"] == "AWS::IAM::Policy"]
    return Policy("stacks", _resolved(policy["Properties"]["PolicyDocument"]))


@pytest.mark.parametrize(
    ("name", "allowed"),
    [("etcd-cluster-etcd", True), ("etcd-cluster-kube-2", True), ("kube-1", False), ("Clm", False)],
)
def test_the_stacks_functions_etcd_grant_covers_etcd_cluster_stacks_only(name: str, allowed: bool) -> None:
    grant, stack = _etcd_grant(), STACKS.format(name=name)
    assert evaluate(Request("cloudformation:GetStackPolicy", stack, {}, frozenset()), [grant]).allowed is allowed
    owned = {"aws:resourcetag/clm:managed-by": "clm"}
    request = Request("cloudformation:SetStackPolicy", stack, owned, frozenset(owned))
    assert evaluate(request, [grant]).allowed is allowed
    unowned = Request("cloudformation:SetStackPolicy", stack, {}, frozenset(owned))
    assert not evaluate(unowned, [grant]).allowed  # only while CLM's tag is on the stack
