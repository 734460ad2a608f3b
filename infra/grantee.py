"""What a grant is given to: a construct whose IAM role takes statements (a hub function, a target role)."""

from __future__ import annotations

from typing import Protocol

from aws_cdk import aws_iam as iam
from constructs import Node

from infra.nag import acknowledge_wildcards


class Grantee(Protocol):
    """A construct with a role: `allow` adds one statement to it (infra.functions.ClmFunction, infra.target_roles)."""

    @property
    def node(self) -> Node: ...

    def allow(
        self, actions: list[str], resources: list[str], conditions: dict | None = None, *, reason: str = ""
    ) -> None: ...


class RoleGrants:
    """Mixin of a construct with a `role`: `allow` adds one statement to it."""

    role: iam.IRole
    node: Node

    def allow(
        self, actions: list[str], resources: list[str], conditions: dict | None = None, *, reason: str = ""
    ) -> None:
        """Add one statement to the role; a wildcard resource needs the `reason` that it is needed (cdk-nag's IAM5
        finding is acknowledged with it on this construct)."""
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=actions, resources=resources, conditions=conditions)
        )
        if any("*" in resource for resource in resources) and not reason:
            raise ValueError(f"{self.node.path}: wildcard resource for {actions} needs a reason")
        acknowledge_wildcards(self, resources, reason)
