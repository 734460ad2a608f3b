"""sts:AssumeRole by a role session, judged as AWS judges it: the target role's trust policy and the caller's own
policies.

The trust policy must allow the caller: a statement for ``sts:AssumeRole`` whose ``Principal`` names the caller's
role ARN (AWS matches a role principal for every session of that role) or its session's ARN, its account
(``123456789012`` or ``arn:aws:iam::123456789012:root``) or ``*``, with its conditions judged on the request's keys;
``Service`` and ``Federated`` principals never match a role session. An explicit deny in the trust policy refuses.
The caller's identity policy must allow too (on the target role's ARN), except in the role's own account when the
trust policy names the caller: a resource-based policy granting a principal's ARN needs no identity grant, though a
permissions boundary still limits it (AWS: "Policy evaluation for requests within a single account").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clm_sandbox.iam import principals
from clm_sandbox.iam.policy import CannotJudge, Decision, Policy, Request, evaluate, policy_effect

ACTION = "sts:AssumeRole"


def assume_role(
    who: principals.Principal, request: Request, identity: Sequence[Policy], boundary: Policy | None
) -> Decision:
    """Whether ``who`` may assume the role ``request.resource`` names (``request`` carries the condition keys);
    raises CannotJudge for a trust policy the sandbox does not evaluate."""
    trust = principals.trust_policy(request.resource, who.partition)
    if trust is None:
        return Decision(False, "the role does not exist")
    statements = trust.statements()
    if not all(isinstance(statement, Mapping) for statement in statements):
        raise CannotJudge(f"a statement of {trust.name} is not an object: {statements!r:.200}")
    if any("NotPrincipal" in statement for statement in statements):
        raise CannotJudge(f"NotPrincipal in {trust.name}")
    named = {who.role_arn, who.arn}
    everyone = {"*", who.account, f"arn:{who.partition}:iam::{who.account}:root"}
    trusting = [s for s in statements if not (named | everyone).isdisjoint(_aws_principals(s))]
    effect = policy_effect(Policy(trust.name, {"Statement": trusting}), request)
    if effect == "Deny":
        return Decision(False, f"an explicit deny in the resource-based policy {trust.name}")
    if effect is None:
        return Decision(False, f"no resource-based policy allows the {ACTION} action ({trust.name})")
    naming = [s for s in trusting if not named.isdisjoint(_aws_principals(s))]
    by_name = policy_effect(Policy(trust.name, {"Statement": naming}), request) == "Allow"
    granted = trust.name if by_name and request.resource.split(":")[4] == who.account else None
    decision = evaluate(request, identity, boundary, granted)
    if not decision.allowed or granted:
        return decision
    return Decision(True, f"{decision.reason} and {trust.name}")


def _aws_principals(statement: Mapping[str, Any]) -> list[str]:
    """The statement's ``AWS`` principals (``"Principal": "*"`` is every principal, ``*``)."""
    principal = statement.get("Principal")
    if principal == "*":
        return ["*"]
    named = principal.get("AWS", []) if isinstance(principal, Mapping) else []
    return [named] if isinstance(named, str) else list(named)
