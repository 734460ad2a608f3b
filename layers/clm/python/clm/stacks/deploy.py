"""Non-blocking stack deployment: `start` creates or updates a stack and returns at once; `check` reports.

Step Functions does the waiting: after `start`, follow `StartResult.next_step` (poll `check`, call `start`
again after a wait, or go on). Both are reentrant: they act on the stack's observed state only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from clm.stacks.cfn import describe_stack, error_code, error_message, role_argument
from clm.stacks.errors import StackRejected
from clm.stacks.events import first_failure
from clm.stacks.ownership import ensure_owned
from clm.stacks.recovery import recover
from clm.stacks.results import StackState, StartResult
from clm.stacks.spec import StackSpec
from clm.stacks.status import DELETED, UPDATABLE, is_in_progress, outcome
from clm.stacks.template import template_argument

NO_UPDATES = "No updates are to be performed"
BUSY = "_IN_PROGRESS state and can not be updated"
POLL_SECONDS = (2, 15)  # the shortest and longest wait between two looks at a stack in progress


def start(
    cfn: Any,
    s3: Any,
    spec: StackSpec,
    *,
    template_bucket: str | None = None,
    role_arn: str | None = None,
    before_update: Callable[[StackSpec], None] | None = None,
) -> StartResult:
    """Create the stack, start its update, wait for a running operation, or repair a broken stack first.
    `before_update` is called once an update is known to be needed, before it starts (it may raise to hold it).

    Templates over 51,200 bytes go through `template_bucket`. `role_arn` is the CloudFormation service role the
    stack is created or updated with (so a stack created without it, e.g. by Zalando's CLM, gets it with its
    next update; CloudFormation keeps using it for later operations and the deletion).
    Raises StackNotOwned when an existing stack of that name lacks the cluster's ownership tags (nothing is
    changed), StackRejected when CloudFormation refuses the request, StackNeedsAttention (ClusterStackRolledBack)
    when a human has to act.
    """
    stack = describe_stack(cfn, spec.name)
    if stack is None:
        return _create(cfn, s3, spec, template_bucket, role_arn)
    ensure_owned(stack, spec.cluster_id, spec.owner_tags)
    status = stack["StackStatus"]
    if is_in_progress(status):
        return StartResult(spec.name, "waiting", status, stack["StackId"])
    if status in UPDATABLE:
        return _update(cfn, s3, spec, stack, template_bucket, role_arn, before_update)
    return recover(cfn, spec, stack, role_arn)


def check(cfn: Any, stack_name: str, now: datetime | None = None) -> StackState:
    """in_progress (with when to look again), complete, failed (with the first failed resource) or deleted."""
    stack = describe_stack(cfn, stack_name)
    if stack is None:
        return StackState(stack_name, "deleted", DELETED)
    status = stack["StackStatus"]
    state = outcome(status)
    failure = first_failure(cfn, stack) if state == "failed" else None
    wait = poll_seconds(stack, now or datetime.now(UTC)) if state == "in_progress" else 0
    return StackState(stack_name, state, status, stack.get("StackStatusReason", ""), failure, wait)


def poll_seconds(stack: dict[str, Any], now: datetime) -> int:
    """When to look again at a stack in progress: a quarter of the time its operation has taken so far, between
    POLL_SECONDS: a small update is seen done within seconds, a long one (an EKS cluster) is not asked every 2 s."""
    started = stack.get("DeletionTime") or stack.get("LastUpdatedTime") or stack.get("CreationTime")
    if started is None:
        return POLL_SECONDS[1]
    return int(min(max((now - started).total_seconds() / 4, POLL_SECONDS[0]), POLL_SECONDS[1]))


def _create(cfn: Any, s3: Any, spec: StackSpec, template_bucket: str | None, role_arn: str | None) -> StartResult:
    try:
        response = cfn.create_stack(
            **role_argument(role_arn),
            StackName=spec.name,
            **template_argument(s3, spec, template_bucket),
            Parameters=spec.api_parameters(),
            Capabilities=spec.capabilities,
            Tags=spec.api_tags(),
            EnableTerminationProtection=True,
            **({"StackPolicyBody": spec.policy} if spec.policy else {}),
        )
    except ClientError as exc:
        if error_code(exc) == "AlreadyExistsException":  # created by someone else since we looked
            return StartResult(spec.name, "waiting")
        raise StackRejected(spec.cluster_id, spec.name, "create", error_message(exc)) from None
    return StartResult(spec.name, "created", "", response["StackId"])


def _update(
    cfn: Any,
    s3: Any,
    spec: StackSpec,
    stack: dict[str, Any],
    template_bucket: str | None,
    role_arn: str | None,
    before_update: Callable[[StackSpec], None] | None,
) -> StartResult:
    status, stack_id = stack["StackStatus"], stack["StackId"]
    try:
        if not stack.get("EnableTerminationProtection"):
            cfn.update_termination_protection(StackName=stack_id, EnableTerminationProtection=True)
        if spec.policy:
            ensure_policy(cfn, stack_id, spec.policy)
        if _is_current(cfn, spec, stack):
            return StartResult(spec.name, "unchanged", status, stack_id)
        if before_update is not None:
            before_update(spec)
        cfn.update_stack(
            **role_argument(role_arn),
            StackName=stack_id,
            **template_argument(s3, spec, template_bucket),
            Parameters=spec.api_parameters(),
            Capabilities=spec.capabilities,
            Tags=spec.api_tags(),
        )
    except ClientError as exc:
        message = error_message(exc)
        if NO_UPDATES in message:
            return StartResult(spec.name, "unchanged", status, stack_id)
        if BUSY in message:  # an operation started since we looked
            return StartResult(spec.name, "waiting", status, stack_id)
        raise StackRejected(spec.cluster_id, spec.name, "update", message) from None
    return StartResult(spec.name, "update_started", status, stack_id)


def ensure_policy(cfn: Any, stack_id: str, policy: str) -> None:
    """Give the stack `policy` unless it has it already (before an update, so that the update is held to it)."""
    if policy_differs(cfn, stack_id, policy):
        cfn.set_stack_policy(StackName=stack_id, StackPolicyBody=policy)


def policy_differs(cfn: Any, stack_id: str, policy: str) -> bool:
    """Whether the stack's own policy is not `policy` (JSON compared as data)."""
    current = cfn.get_stack_policy(StackName=stack_id).get("StackPolicyBody") or ""
    return _policy(current) != _policy(policy)


def _policy(text: str) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text


def _is_current(cfn: Any, spec: StackSpec, stack: dict[str, Any]) -> bool:
    """Same template, parameters and tags as deployed: CloudFormation would perform no update."""
    deployed_parameters = {p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])}
    deployed_tags = {t["Key"]: t["Value"] for t in stack.get("Tags", [])}
    if deployed_parameters != spec.parameters or deployed_tags != spec.tags:
        return False
    deployed = cfn.get_template(StackName=stack["StackId"], TemplateStage="Original")["TemplateBody"]
    if isinstance(deployed, str):
        return deployed == spec.body
    try:  # boto3 hands JSON templates over parsed
        return deployed == json.loads(spec.body)
    except ValueError:
        return False
