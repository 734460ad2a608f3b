"""The ClusterStackRole against CloudFormation's resource schemas (as cfn-lint ships them): every permission that
a create, update or delete handler of a resource type in the examples' stacks lists is allowed by the role, or is
an omission with its reason in infra.cluster_stack_role.OMITTED.

The stacks are the cluster and node-pool stacks of examples/config (clusters of examples/clusters.yaml) and of
examples/eks, rendered by clm's renderer; the role is the synthesized one (cdk.json's defaults). examples/eks
needs its cluster-stack-policy.yaml on top, which the operator attaches (clm:clusterStackPolicyArns).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

import pytest
from cfnlint.data import AdditionalSpecs
from cfnlint.helpers import load_resource
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

from clm.config.local import LocalSource
from clm.registry.clusters_yaml import load_clusters
from clm.render.cfn_yaml import load_template
from clm.render.renderer import Renderer
from infra.cluster_stack_role import OMITTED
from infra.ingress_stack_deletes import INGRESS_STACK_TYPES
from tests.unit.iam_actions import allowing, as_list
from tests.unit.test_infra import DEFAULTS, policy_statements, synthesized

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HANDLERS = ("create", "update", "delete")
# (configuration, registry, managed policy the operator adds to the role for it)
EXAMPLE_SETS = {
    "examples/config": (EXAMPLES / "config", EXAMPLES / "clusters.yaml", None),
    "examples/eks": (
        EXAMPLES / "eks" / "config",
        EXAMPLES / "eks" / "clusters.yaml",
        EXAMPLES / "eks" / "cluster-stack-policy.yaml",
    ),
}


@pytest.fixture(scope="module")
def role_statements(tmp_path_factory) -> list[dict[str, Any]]:
    """The statements of the synthesized ClusterStackRole's policy."""
    _, raw, _ = synthesized(DEFAULTS, tmp_path_factory.mktemp("cdk-cluster-stack-role"))
    statements = policy_statements(raw, "ClusterStackRole")
    assert statements, "no policy of the ClusterStackRole found"
    return statements


def resource_types(config: Path, registry: Path) -> set[tuple[str, str]]:
    """(region, resource type) of every resource in every cluster and node-pool stack of the examples."""
    tree = LocalSource(str(config)).fetch()
    found = set()
    for cluster in load_clusters(registry.read_text(), source=str(registry)):
        rendered = Renderer(tree).render(cluster)
        for stack in (rendered.cluster_stack, *rendered.node_pool_stacks.values()):
            found |= {(cluster.region, resource["Type"]) for resource in stack.template["Resources"].values()}
    return found


def handler_permissions(region: str, resource_type: str) -> list[tuple[str, str]]:
    """(handler, action) of every permission the type's create, update and delete handlers list."""
    handlers = PROVIDER_SCHEMA_MANAGER.get_resource_schema(region, resource_type).schema.get("handlers", {})
    return [(handler, action) for handler in HANDLERS for action in handlers.get(handler, {}).get("permissions", [])]


def extra_statements(policy: Path | None) -> list[dict[str, Any]]:
    """The statements of the example's managed policy template (none without one)."""
    if policy is None:
        return []
    [resource] = load_template(policy.read_text())["Resources"].values()
    return resource["Properties"]["PolicyDocument"]["Statement"]


def not_allowed(statements: list[dict[str, Any]], types: set[tuple[str, str]]) -> list[str]:
    """`<type> <handler>: <action>` for every handler permission neither allowed nor an omission."""
    return sorted(
        {
            f"{resource_type} {handler}: {action}"
            for region, resource_type in types
            for handler, action in handler_permissions(region, resource_type)
            if not allowing(statements, action) and action not in OMITTED.get(resource_type, {})
        }
    )


@pytest.mark.parametrize("example", sorted(EXAMPLE_SETS))
def test_the_role_allows_every_handler_permission_of_the_examples_stacks(role_statements, example):
    config, registry, policy = EXAMPLE_SETS[example]
    types = resource_types(config, registry)
    assert {kind for _, kind in types} >= {"AWS::AutoScaling::AutoScalingGroup", "AWS::IAM::Role"}
    missing = not_allowed(role_statements + extra_statements(policy), types)
    assert not missing, (
        f"{example}: the ClusterStackRole does not allow (grant, or omit with the reason):\n" + "\n".join(missing)
    )


def test_the_role_allows_every_delete_handler_permission_of_the_ingress_controllers_stacks(role_statements):
    """Decommission deletes kube-ingress-aws-controller's load balancer stacks with the role (clm.stacks.ingress);
    CLM never creates nor updates them, so only the delete handlers count."""
    needed = [
        (resource_type, action)
        for resource_type in INGRESS_STACK_TYPES
        for handler, action in handler_permissions("eu-central-1", resource_type)
        if handler == "delete"
    ]
    assert {action for _, action in needed} >= {"elasticloadbalancing:DeleteLoadBalancer", "cloudwatch:DeleteAlarms"}
    assert [f"{kind}: {action}" for kind, action in needed if not allowing(role_statements, action)] == []
    created = {action for kind in INGRESS_STACK_TYPES for h, action in handler_permissions("eu-central-1", kind)}
    not_deleting = {"elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:ModifyListener"} & created
    assert not_deleting and not any(allowing(role_statements, action) for action in not_deleting)


def test_every_omission_is_of_a_permission_the_examples_need_and_the_role_does_not_grant(role_statements):
    listed = {
        (resource_type, action)
        for config, registry, policy in EXAMPLE_SETS.values()
        for region, resource_type in resource_types(config, registry)
        for _, action in handler_permissions(region, resource_type)
        if not allowing(role_statements + extra_statements(policy), action)
    }
    stale = [(kind, action) for kind, actions in OMITTED.items() for action in actions if (kind, action) not in listed]
    assert stale == [], "omissions no example stack needs (or that the role now grants): drop them from OMITTED"
    assert all(reason for actions in OMITTED.values() for reason in actions.values())


def test_a_permission_is_missing_until_granted_or_omitted():
    types = {("eu-central-1", "AWS::IAM::Role")}
    delete = [{"Effect": "Allow", "Action": "iam:DeleteRole", "Resource": "*"}]
    assert "AWS::IAM::Role delete: iam:ListRolePolicies" in not_allowed(delete, types)
    everything = [{"Effect": "Allow", "Action": "IAM:*", "Resource": "*"}]  # case-insensitive, wildcards
    assert not_allowed(everything, types) == []
    assert not_allowed([{**everything[0], "Effect": "Deny"}], types) != []


def test_every_action_granted_exists(role_statements):
    """A misspelt action grants (or denies) nothing: each one is in the Service Authorization Reference (cfn-lint's
    copy); a wildcard of a denial matches at least one."""
    services = load_resource(AdditionalSpecs, "Policies.json")
    statements = role_statements + extra_statements(EXAMPLE_SETS["examples/eks"][2])
    unknown = []
    for action in sorted({action for statement in statements for action in as_list(statement["Action"])}):
        service, name = action.split(":")
        if not fnmatch.filter(services.get(service, {}).get("Actions", {}), name.lower()):
            unknown.append(action)
    assert unknown == []
