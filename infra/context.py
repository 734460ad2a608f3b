"""The app's settings, read from CDK context (cdk.json, `cdk -c key=value`), with their defaults and checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from constructs import Construct

# What CloudWatch Logs accepts as RetentionInDays.
LOG_RETENTION_DAYS = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)


class ContextError(ValueError):
    """A context value that the app cannot use; the message names the context key."""


@dataclass(frozen=True)
class ClmContext:
    """Every `clm:*` context value the stack reads."""

    registry_table_name: str | None = None
    config_prefix: str = "config/"
    codecommit_repository: str | None = None
    codecommit_branch: str = "main"
    log_retention_days: int = 30
    vpc_id: str | None = None
    subnet_ids: tuple[str, ...] = ()
    kube_secret_prefix: str = "clm/"
    state_machine_name: str = "clm-provision"
    cluster_stack_policy_arns: tuple[str, ...] = ()
    max_running: int = 10
    roll_steps_per_execution: int = 300

    @property
    def roll_state_machine_name(self) -> str:
        """The name of the roll-node-pool workflow (named, so that permissions can point at it without a cycle)."""
        return f"{self.state_machine_name}-roll-node-pool"

    @classmethod
    def of(cls, scope: Construct) -> ClmContext:
        """The context of `scope`'s app; ContextError names the first unusable key."""
        node = scope.node
        defaults = cls()
        context = cls(
            registry_table_name=_text(node, "clm:registryTableName") or None,
            config_prefix=_text(node, "clm:configPrefix", defaults.config_prefix),
            codecommit_repository=_text(node, "clm:codeCommitRepository") or None,
            codecommit_branch=_text(node, "clm:codeCommitBranch", defaults.codecommit_branch),
            log_retention_days=_number(node, "clm:logRetentionDays", defaults.log_retention_days),
            vpc_id=_text(node, "clm:vpcId") or None,
            subnet_ids=_names(node, "clm:subnetIds"),
            kube_secret_prefix=_text(node, "clm:kubeSecretPrefix", defaults.kube_secret_prefix),
            state_machine_name=_text(node, "clm:stateMachineName", defaults.state_machine_name),
            cluster_stack_policy_arns=_names(node, "clm:clusterStackPolicyArns"),
            max_running=_number(node, "clm:maxRunning", defaults.max_running),
            roll_steps_per_execution=_number(node, "clm:rollStepsPerExecution", defaults.roll_steps_per_execution),
        )
        context.check()
        return context

    def check(self) -> None:
        """Raise ContextError for values that cannot work together."""
        if self.log_retention_days not in LOG_RETENTION_DAYS:
            allowed = ", ".join(str(days) for days in sorted(LOG_RETENTION_DAYS))
            raise ContextError(f"clm:logRetentionDays: {self.log_retention_days} is not one of {allowed}")
        if bool(self.vpc_id) != bool(self.subnet_ids):
            raise ContextError("clm:vpcId and clm:subnetIds: give both (Lambdas in a VPC) or neither")
        if self.config_prefix.startswith("/"):
            raise ContextError(f"clm:configPrefix: {self.config_prefix!r} must not start with '/'")
        if self.max_running < 1:
            raise ContextError(f"clm:maxRunning: {self.max_running} must be at least 1")
        if self.roll_steps_per_execution < 2:
            raise ContextError(f"clm:rollStepsPerExecution: {self.roll_steps_per_execution} must be at least 2")
        if not self.kube_secret_prefix:
            raise ContextError("clm:kubeSecretPrefix: must not be empty (it scopes secret access)")


def _raw(node: Any, key: str) -> Any:
    return node.try_get_context(key)


def _text(node: Any, key: str, default: str = "") -> str:
    value = _raw(node, key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ContextError(f"{key}: expected a string, got {value!r}")
    return value.strip()


def _number(node: Any, key: str, default: int) -> int:
    value = _raw(node, key)
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ContextError(f"{key}: expected a whole number, got {value!r}") from None


def _names(node: Any, key: str) -> tuple[str, ...]:
    """A list, or a comma-separated string (how `cdk -c key=a,b` passes it)."""
    value = _raw(node, key)
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
        raise ContextError(f"{key}: expected a list of strings or a comma-separated string, got {value!r}")
    return tuple(item.strip() for item in items if item.strip())
