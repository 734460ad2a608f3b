"""The app's settings, read from CDK context (cdk.json, `cdk -c key=value`), with their defaults and checks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from constructs import Construct

# What CloudWatch Logs accepts as RetentionInDays.
LOG_RETENTION_DAYS = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)
# A KMS key's ARN (kms:Decrypt is scoped by key ARN; an alias ARN would match nothing).
KEY_ARN = re.compile(r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+")

IAM_PATH = re.compile(r"/([\x21-\x7e]+/)?")  # IAM: / alone, or /.../ of printable ASCII
ACCOUNT = re.compile(r"\d{12}")
REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+")
# An SNS standard topic's ARN (EventBridge's target; a FIFO topic would need a message group).
TOPIC_ARN = re.compile(r"arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}")
MANAGED_POLICY_ARN = re.compile(r"arn:aws[\w-]*:iam::(\d{12}|aws):policy/[\w+=,.@/-]+")


class ContextError(ValueError):
    """A context value that the app cannot use; the message names the context key."""


@dataclass(frozen=True)
class ClmContext:
    """Every `clm:*` context value the stack reads."""

    registry_table_name: str | None = None
    config_prefix: str = "config/"
    extra_config_prefixes: tuple[str, ...] = ()  # `name=prefix`: more sources in the config bucket (combined)
    codecommit_repository: str | None = None
    codecommit_branch: str = "main"
    log_retention_days: int = 30
    vpc_id: str | None = None
    subnet_ids: tuple[str, ...] = ()
    kube_secret_prefix: str = "clm/"
    state_machine_name: str = "clm-provision"
    cluster_stack_policy_arns: tuple[str, ...] = ()
    cluster_role_path: str = "/clm-cluster/"  # infra.cluster_role_boundary.CLUSTER_ROLE_PATH
    cluster_role_boundary_arn: str | None = None  # None: CLM's own boundary
    max_running: int = 10
    decrypt_key_arns: tuple[str, ...] = ()
    roll_steps_per_execution: int = 300
    manage_etcd_stack: bool = False  # CLM's --manage-etcd-stack: provision cluster/etcd/stack.yaml (zalando-aws)
    apply_only: bool = False  # CLM's --apply-only: stacks and manifests, no node pool rolled (clm.workflow.apply_only)
    target_accounts: tuple[str, ...] = ()  # the accounts the hub may reach (`*`: any); none: its own only
    target_include: str = ""  # a regex on the account id (CLM's --include)
    target_exclude: str = ""  # a regex on the account id (CLM's --exclude)
    notify: bool = False  # an SNS topic made for CLM's events (docs/events.md)
    notify_topic_arn: str | None = None  # or a topic of the user's that they go to

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
            extra_config_prefixes=_names(node, "clm:extraConfigPrefixes"),
            codecommit_repository=_text(node, "clm:codeCommitRepository") or None,
            codecommit_branch=_text(node, "clm:codeCommitBranch", defaults.codecommit_branch),
            log_retention_days=_number(node, "clm:logRetentionDays", defaults.log_retention_days),
            vpc_id=_text(node, "clm:vpcId") or None,
            subnet_ids=_names(node, "clm:subnetIds"),
            kube_secret_prefix=_text(node, "clm:kubeSecretPrefix", defaults.kube_secret_prefix),
            state_machine_name=_text(node, "clm:stateMachineName", defaults.state_machine_name),
            cluster_stack_policy_arns=_names(node, "clm:clusterStackPolicyArns"),
            cluster_role_path=_text(node, "clm:clusterRolePath", defaults.cluster_role_path),
            cluster_role_boundary_arn=_text(node, "clm:clusterRoleBoundaryPolicyArn") or None,
            max_running=_number(node, "clm:maxRunning", defaults.max_running),
            decrypt_key_arns=_names(node, "clm:decryptKeyArns"),
            roll_steps_per_execution=_number(node, "clm:rollStepsPerExecution", defaults.roll_steps_per_execution),
            manage_etcd_stack=_flag(node, "clm:manageEtcdStack"),
            apply_only=_flag(node, "clm:applyOnly"),
            target_accounts=_names(node, "clm:targetAccounts"),
            target_include=_text(node, "clm:targetInclude"),
            target_exclude=_text(node, "clm:targetExclude"),
            notify=_flag(node, "clm:notify"),
            notify_topic_arn=_text(node, "clm:notifyTopicArn") or None,
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
        for extra in self.extra_config_prefixes:
            name, sep, prefix = extra.partition("=")
            if not sep or not re.fullmatch(r"[A-Za-z0-9._-]+", name) or name == "main" or prefix.startswith("/"):
                raise ContextError(
                    f"clm:extraConfigPrefixes: {extra!r} is not <name>=<prefix> (name [A-Za-z0-9._-]+, not main; "
                    "prefix not starting with '/')"
                )
        if self.max_running < 1:
            raise ContextError(f"clm:maxRunning: {self.max_running} must be at least 1")
        for arn in self.decrypt_key_arns:
            if not KEY_ARN.fullmatch(arn):
                raise ContextError(
                    f"clm:decryptKeyArns: {arn!r} is not a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID; "
                    "IAM scopes kms:Decrypt by key ARN, not by alias)"
                )
        if not IAM_PATH.fullmatch(self.cluster_role_path):
            raise ContextError(f"clm:clusterRolePath: {self.cluster_role_path!r} is not an IAM path (/name/)")
        boundary = self.cluster_role_boundary_arn
        if boundary is not None and not MANAGED_POLICY_ARN.fullmatch(boundary):
            raise ContextError(f"clm:clusterRoleBoundaryPolicyArn: {boundary!r} is not a managed policy's ARN")
        if self.roll_steps_per_execution < 2:
            raise ContextError(f"clm:rollStepsPerExecution: {self.roll_steps_per_execution} must be at least 2")
        if not self.kube_secret_prefix:
            raise ContextError("clm:kubeSecretPrefix: must not be empty (it scopes secret access)")
        self._check_targets()
        self._check_notify()

    def _check_notify(self) -> None:
        """clm:notifyTopicArn is a standard topic's ARN, and comes without clm:notify (one topic or the other)."""
        topic = self.notify_topic_arn
        if topic is not None and not TOPIC_ARN.fullmatch(topic):
            raise ContextError(
                f"clm:notifyTopicArn: {topic!r} is not an SNS standard topic's ARN (arn:aws:sns:REGION:ACCOUNT:NAME)"
            )
        if topic is not None and self.notify:
            raise ContextError("clm:notify and clm:notifyTopicArn: give one (a topic made for CLM, or yours)")

    def _check_targets(self) -> None:
        """The target accounts are 12-digit ids or `*` alone; include and exclude compile as regexes."""
        accounts = self.target_accounts
        if accounts != ("*",) and not all(ACCOUNT.fullmatch(account) for account in accounts):
            raise ContextError(
                f"clm:targetAccounts: {','.join(accounts)!r} is not a list of 12-digit account ids, nor `*` alone"
            )
        for key, pattern in (("clm:targetInclude", self.target_include), ("clm:targetExclude", self.target_exclude)):
            try:
                re.compile(pattern)
            except re.error as error:
                raise ContextError(f"{key}: {pattern!r} is not a regular expression ({error})") from None


@dataclass(frozen=True)
class Hub:
    """The account and region of the hub a target stack serves (context `clm:hub`, `<account>:<region>`)."""

    account: str
    region: str

    @classmethod
    def of(cls, scope: Construct) -> Hub:
        """The hub of `scope`'s app; ContextError names the key when it is missing or malformed."""
        text = _text(scope.node, "clm:hub")
        account, _, region = text.partition(":")
        if not ACCOUNT.fullmatch(account) or not REGION.fullmatch(region):
            raise ContextError(
                f"clm:hub: {text!r} is not <12-digit account>:<region> (the hub's, e.g. 123456789012:eu-central-1)"
            )
        return cls(account, region)


def _raw(node: Any, key: str) -> Any:
    return node.try_get_context(key)


def _text(node: Any, key: str, default: str = "") -> str:
    value = _raw(node, key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ContextError(f"{key}: expected a string, got {value!r}")
    return value.strip()


def _flag(node: Any, key: str) -> bool:
    """true/false, as JSON (cdk.json) or text (`cdk -c key=true`); absent: false."""
    value = _raw(node, key)
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ContextError(f"{key}: expected true or false, got {value!r}")


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
