"""Which of the handler permissions a resource schema lists `clm render --stack-policy` writes, and why not the others.

A written policy is held to the boundary of CLM's own roles (docs/security.md, "Config writer"): its actions are ones
IAM knows, each named (no `svc:*`, no `Describe*`), and of IAM only those on roles and instance profiles, which the
ClusterStackRole keeps under CLM's path and boundary whatever else allows them. The rest of IAM (users, groups,
policies, identity providers, account settings), STS, Organizations and IAM Identity Center would let a
configuration writer give themselves or others rights beyond that boundary: they are dropped and named instead.
"""

from __future__ import annotations

import functools
from typing import Any

# IAM resource types whose changes the ClusterStackRole holds to CLM's path and permissions boundary.
ROLE_RESOURCES = frozenset({"role", "instance-profile"})
# Services that make identities or grant access to them: never in a written policy.
IDENTITY_SERVICES = frozenset({"sts", "organizations", "sso", "sso-directory", "identitystore"})

NOT_IAM = "IAM knows no such action (the Service Authorization Reference, cfn-lint's copy): nothing to grant"
WILDCARD = (
    "a wildcard: a written policy names each action it grants; grant the calls the type needs by name, scoped to "
    "your resources, if you mean to"
)
IDENTITY = (
    "IAM beyond roles and instance profiles, STS, Organizations or IAM Identity Center: CLM's permissions boundary "
    "does not hold them, so a configuration writer could give themselves rights beyond it; the ClusterStackRole "
    "denies IAM's user, group, policy, identity-provider and account changes whatever extra policies allow"
)


@functools.cache
def _service_actions() -> dict[str, dict[str, Any]]:
    from cfnlint.data import AdditionalSpecs
    from cfnlint.helpers import load_resource

    return load_resource(AdditionalSpecs, "Policies.json")


def is_iam_action(action: str) -> bool:
    """Whether IAM knows the action (the Service Authorization Reference, cfn-lint's copy); a wildcard counts when
    its service exists. Schemas list a few that are not (`s3:DeleteBucketAnalyticsConfiguration`)."""
    service, _, name = action.partition(":")
    actions = _service_actions().get(service, {}).get("Actions")
    return actions is not None and ("*" in name or name.lower() in actions)


def refusal(action: str) -> str | None:
    """Why a written policy leaves `action` out (NOT_IAM, WILDCARD, IDENTITY), or None when it may grant it."""
    if "*" in action or "?" in action:
        return WILDCARD
    if not is_iam_action(action):
        return NOT_IAM
    service, _, name = action.partition(":")
    if service == "iam":
        acts_on = set(_service_actions()["iam"]["Actions"][name.lower()].get("Resources", ()))
        return None if acts_on and acts_on <= ROLE_RESOURCES else IDENTITY
    return IDENTITY if service in IDENTITY_SERVICES else None
