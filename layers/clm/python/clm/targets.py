"""Where the hub acts for a cluster: the accounts the deployment may reach and the target role it assumes there.

A cluster's AWS resources live in its `infrastructure_account` and `region` (its target). The hub reaches a target
only through the role its target stack deploys there (docs/fleet.md), and only in the accounts the deployment
allows (`clm:targetAccounts`, `clm:targetInclude`, `clm:targetExclude`, as CLM's --include/--exclude).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from clm.errors import ClmError

ACCOUNTS_ENV, INCLUDE_ENV, EXCLUDE_ENV, ROLE_ENV = (
    "CLM_TARGET_ACCOUNTS",
    "CLM_TARGET_INCLUDE",
    "CLM_TARGET_EXCLUDE",
    "CLM_TARGET_ROLE",
)
DEFAULT_ROLE = "clm-target-{region}"  # the hub sets CLM_TARGET_ROLE per function: clm-target-{region}-<function>
STACK_ROLE = "clm-target-{region}-cloudformation"  # the target's ClusterStackRole (infra.target_roles.CLOUDFORMATION)
DEPLOY_HINT = "deploy the target stack there: `cdk deploy ClmTarget -c clm:hub=<hub account>:<hub region>`"


@dataclass(frozen=True)
class Target:
    """An AWS account (12 digits) and a region that hold clusters."""

    account: str
    region: str

    def __str__(self) -> str:
        return f"account {self.account}, region {self.region}"

    def stack_role_arn(self, partition: str = "aws") -> str:
        """The ClusterStackRole of the target stack here, with which CloudFormation handles cluster stacks."""
        return f"arn:{partition}:iam::{self.account}:role/{STACK_ROLE.format(region=self.region)}"

    @property
    def node_files_bucket(self) -> str:
        """CLM's node-files bucket here (infra.node_files.bucket_name)."""
        return f"cluster-lifecycle-manager-{self.account}-{self.region}"

    @property
    def templates_bucket(self) -> str:
        """The target stack's bucket for templates over CloudFormation's inline limit (infra.target_stack)."""
        return f"clm-templates-{self.account}-{self.region}"


class TargetRefused(ClmError):
    """The hub may not or cannot act in a cluster's account and region; the message (and `why`, without the cluster
    and target) says why and the fix."""

    asl_name = "TargetRefused"

    def __init__(self, cluster_id: str, target: Target, why: str):
        self.cluster_id = cluster_id
        self.target = target
        self.why = why
        super().__init__(f"cluster {cluster_id}: {target}: {why}")


@dataclass(frozen=True)
class TargetPolicy:
    """Which accounts the deployment may reach (None: any, `*` said explicitly) and the target role's name pattern
    (`{region}` filled in)."""

    accounts: frozenset[str] | None
    include: re.Pattern[str] | None = None
    exclude: re.Pattern[str] | None = None
    role_name: str = DEFAULT_ROLE

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ, home: str = "") -> TargetPolicy:
        """From the deployment's environment: CLM_TARGET_ACCOUNTS (comma-separated, or `*`) and `home` (the hub's own
        account, always allowed), CLM_TARGET_INCLUDE / CLM_TARGET_EXCLUDE (regexes on the account id) and
        CLM_TARGET_ROLE."""
        named = environ.get(ACCOUNTS_ENV, "").strip()
        accounts = None if named == "*" else {a.strip() for a in named.split(",") if a.strip()} | ({home} - {""})
        return cls(
            frozenset(accounts) if accounts is not None else None,
            _regex(environ.get(INCLUDE_ENV)),
            _regex(environ.get(EXCLUDE_ENV)),
            environ.get(ROLE_ENV) or DEFAULT_ROLE,
        )

    def refusal(self, target: Target) -> str:
        """Why the deployment may not reach `target`'s account (empty when it may)."""
        if self.accounts is not None and target.account not in self.accounts:
            allowed = ", ".join(sorted(self.accounts)) or "none"
            return f"account {target.account} is not one this deployment may reach (clm:targetAccounts: {allowed})"
        if self.include is not None and not self.include.fullmatch(target.account):
            return f"account {target.account} does not match clm:targetInclude {self.include.pattern}"
        if self.exclude is not None and self.exclude.fullmatch(target.account):
            return f"account {target.account} matches clm:targetExclude {self.exclude.pattern}"
        return ""

    def role_arn(self, target: Target, partition: str = "aws") -> str:
        """The ARN of the role the hub assumes in `target`."""
        return f"arn:{partition}:iam::{target.account}:role/{self.role_name.format(region=target.region)}"


def _regex(text: str | None) -> re.Pattern[str] | None:
    return re.compile(text) if text else None
