"""The stacks function's IAM (the synthesized policy, judged by the sandbox's evaluator as AWS evaluates it): of the
stacks CLM did not create, it may delete only kube-ingress-aws-controller's (tag kubernetes:application), and only
with the ClusterStackRole as the stack's role; it may not update them. A stack carrying only the cluster's tag, or
another application's, stays out of reach."""

from __future__ import annotations

from typing import Any

import pytest

from clm_sandbox.iam.policy import Policy, Request, evaluate
from tests.unit.test_cluster_role_boundary import ACCOUNT, PSEUDO
from tests.unit.test_infra import DEFAULTS, policy_statements, synthesized

STACK = f"arn:aws:cloudformation:eu-central-1:{ACCOUNT}:stack/kube-ing-1/0a1b2c3d"
CLUSTER_TAG = "kubernetes.io/cluster/aws:123456789012:eu-central-1:kube-1"
INGRESS = {CLUSTER_TAG: "owned", "kubernetes:application": "kube-ingress-aws-controller"}
KNOWN = frozenset({"aws:resourcetag/", "aws:requesttag/", "aws:tagkeys", "cloudformation:rolearn"})


def resolved(value: Any) -> Any:
    """Fn::Join, pseudo parameters and GetAtt (a role's ARN named after its logical id) filled in."""
    if isinstance(value, list):
        return [resolved(item) for item in value]
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(resolved(part) for part in parts)
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return PSEUDO.get(value["Ref"], value["Ref"])
    if isinstance(value, dict) and set(value) == {"Fn::GetAtt"}:
        return f"arn:aws:iam::{ACCOUNT}:role/{value['Fn::GetAtt'][0]}"
    if isinstance(value, dict):
        return {key: resolved(item) for key, item in value.items()}
    return value


@pytest.fixture(scope="module")
def stacks_function(tmp_path_factory) -> tuple[Policy, str]:
    """The stacks function's policy as IAM sees it, and the ClusterStackRole's ARN (the role it may pass)."""
    raw = synthesized(DEFAULTS, tmp_path_factory.mktemp("cdk-ingress-iam"))[1]
    statements = resolved(policy_statements(raw, "StacksFunctionRole"))
    [pass_role] = [s for s in statements if s["Action"] == "iam:PassRole"]
    return Policy("StacksFunction", {"Statement": statements}), pass_role["Resource"]


def allowed(policy: Policy, action: str, tags: dict[str, str], role: str | None = None) -> bool:
    context = {f"aws:resourcetag/{key}".lower(): value for key, value in tags.items()}
    if role:
        context["cloudformation:rolearn"] = role
    return evaluate(Request(action, STACK, context, KNOWN), [policy]).allowed


def test_the_controllers_stack_may_be_deleted_only_with_the_cluster_stack_role(stacks_function):
    policy, cluster_stack_role = stacks_function
    assert allowed(policy, "cloudformation:DeleteStack", INGRESS, cluster_stack_role)
    assert not allowed(policy, "cloudformation:DeleteStack", INGRESS)  # its own rights, or the stack's last role
    assert not allowed(policy, "cloudformation:DeleteStack", INGRESS, f"arn:aws:iam::{ACCOUNT}:role/admin")
    assert allowed(policy, "cloudformation:UpdateTerminationProtection", INGRESS)  # the controller may set it
    for action in ("cloudformation:UpdateStack", "cloudformation:ContinueUpdateRollback"):
        assert not allowed(policy, action, INGRESS, cluster_stack_role)


@pytest.mark.parametrize(
    "tags",
    [
        {CLUSTER_TAG: "owned"},  # the cluster's tag alone: someone else's stack for the cluster
        {CLUSTER_TAG: "owned", "kubernetes:application": "external-dns"},
        {CLUSTER_TAG: "owned", "kubernetes:application": "Kube-Ingress-AWS-Controller"},  # values match exactly
        {"team": "data"},
    ],
    ids=["cluster-tag-only", "another-application", "case", "unrelated"],
)
def test_a_stack_it_did_not_create_without_the_ingress_tag_may_not_be_deleted(stacks_function, tags):
    policy, cluster_stack_role = stacks_function
    assert not allowed(policy, "cloudformation:DeleteStack", tags, cluster_stack_role)
    assert not allowed(policy, "cloudformation:UpdateTerminationProtection", tags)


def test_the_control_clms_own_stacks_stay_deletable(stacks_function):
    policy, cluster_stack_role = stacks_function
    assert allowed(
        policy, "cloudformation:DeleteStack", {CLUSTER_TAG: "owned", "clm:managed-by": "clm"}, cluster_stack_role
    )
