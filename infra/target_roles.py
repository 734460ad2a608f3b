"""The roles the hub assumes in a target account and region, one per function that touches clusters, and the hub's
grants to assume them (docs/fleet.md).

A target role is named `clm-target-<region>-<function>` (clm.targets.DEFAULT_ROLE and the function) and trusts the
hub account only for the principal whose ARN is that function's role in the hub stack: CloudFormation names it
`Clm-<Folder>FunctionRole<hash>-<suffix>`, so the trust matches that prefix (ArnLike on aws:PrincipalArn).
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.context import ClmContext, Hub
from infra.functions import ClmFunction, role_name_prefix
from infra.grantee import RoleGrants

TARGET_ROLE = "clm-target-{region}"  # clm.targets.DEFAULT_ROLE
CLOUDFORMATION = "cloudformation"  # the target's ClusterStackRole: clm-target-<region>-cloudformation (clm.targets)
ACCOUNTS_ENV, INCLUDE_ENV, EXCLUDE_ENV, ROLE_ENV = (  # clm.targets
    "CLM_TARGET_ACCOUNTS",
    "CLM_TARGET_INCLUDE",
    "CLM_TARGET_EXCLUDE",
    "CLM_TARGET_ROLE",
)


def role_name(folder: str, region: str = "{region}") -> str:
    """The name of `folder`'s target role in `region` (`{region}` kept: the pattern clm.targets fills in)."""
    return f"{TARGET_ROLE.format(region=region)}-{folder}"


class TargetRole(RoleGrants, Construct):
    """The role the hub's `folder` function assumes in this stack's account and region; `allow` grants it more."""

    def __init__(self, scope: Construct, construct_id: str, *, folder: str, hub: Hub) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        hub_role = stack.format_arn(
            service="iam", region="", account=hub.account, resource="role", resource_name=f"{role_name_prefix(folder)}*"
        )
        self.role = iam.Role(
            self,
            "Role",
            role_name=role_name(folder, stack.region),
            assumed_by=iam.AccountPrincipal(hub.account).with_conditions({"ArnLike": {"aws:PrincipalArn": hub_role}}),
            description=f"CLM target: the hub's {folder} function acts on clusters here (hub {hub.account}, "
            f"{hub.region})",
        )


def grant_target_access(functions: Mapping[str, ClmFunction], context: ClmContext) -> None:
    """Tell each hub function (by folder) its target role and the accounts it may reach, and let it assume its target
    role in each of them and in the hub's own account (whose other regions hold target stacks too)."""
    for folder, function in functions.items():
        tell_target_accounts(function, context)
        function.function.add_environment(ROLE_ENV, role_name(folder))
        stack = Stack.of(function)
        roles = [
            stack.format_arn(
                service="iam", region="", account=account, resource="role", resource_name=role_name(folder, "*")
            )
            for account in _with_own(context.target_accounts, stack.account)
        ]
        function.allow(
            ["sts:AssumeRole"],
            roles,
            reason="one target role per region (clm-target-<region>-<function>), in the hub's own account (its "
            "other regions) and the accounts clm:targetAccounts names",
        )


def tell_target_accounts(function: ClmFunction, context: ClmContext) -> None:
    """The accounts the hub may reach, in `function`'s environment (reconcile starts no run for a cluster outside)."""
    environment = {
        ACCOUNTS_ENV: ",".join(context.target_accounts),
        INCLUDE_ENV: context.target_include,
        EXCLUDE_ENV: context.target_exclude,
    }
    for name, value in environment.items():
        if value:
            function.function.add_environment(name, value)


def _with_own(accounts: tuple[str, ...], own: str) -> tuple[str, ...]:
    """The accounts named and the hub's own (`*` alone stays alone)."""
    return accounts if accounts == ("*",) else (own, *accounts)
