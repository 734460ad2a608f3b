"""The `run` function's step `check_targets` (`clm targets`): for each account and region asked, whether the hub may
act there (its clm:targetAccounts, clm:targetInclude, clm:targetExclude), whether it can (its target role assumed now)
and the target stack's status there. Only the hub's function roles may assume target roles, so the check runs here.

The request is checked whole before any AWS call: at most MAX_TARGETS targets, each a 12-digit account and a region
as the registry writes them (BadTargets otherwise); a target the hub's settings do not allow gets no AssumeRole.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from clm.aws import client
from clm.errors import ClmError
from clm.model import REGION_RE
from clm.target_sessions import TargetSessions
from clm.targets import DEPLOY_HINT, Target, TargetPolicy, TargetRefused
from clm.workflow import placement

MAX_TARGETS = 25  # per call: each may take an AssumeRole and two calls in another region, within the 60 s timeout
ACCOUNT_RE = re.compile(r"\d{12}")
TARGET_STACK = "ClmTarget"  # infra.target_stack.TARGET_STACK_NAME
HEALTHY = ("CREATE_COMPLETE", "UPDATE_COMPLETE")
HOME = "hub"  # the stack column of the hub's own account and region: the hub stack serves it, no target stack


class BadTargets(ClmError):
    """`check_targets` was asked for something else than a bounded list of accounts and regions."""

    asl_name = "BadTargets"


@dataclass(frozen=True)
class TargetCheck:
    """What the hub found for one target: `allowed` by its settings; `reachable`: its target role assumed (None: not
    tried); `stack`: the target stack's status (HOME at the hub's own, "none": no such stack, "": not looked at) and
    `stack_hub` its output Hub; `why`: the first thing wrong, with its fix ("" when nothing is)."""

    account: str
    region: str
    allowed: bool
    reachable: bool | None = None
    stack: str = ""
    stack_hub: str = ""
    why: str = ""


def check_targets(event: dict[str, Any]) -> dict[str, Any]:
    """`{targets: [{account, region}, ...]}` -> `{hub: "<account>:<region>", targets: [TargetCheck, ...]}`, one per
    target asked (duplicates once, in the order asked); BadTargets before any AWS call for a malformed request."""
    asked = parse(event.get("targets"))
    home = placement.deployment()
    policy = TargetPolicy.from_env(home=home.account)
    sessions = TargetSessions(policy, client("sts"))  # not the steps' kept sessions: each role is assumed now
    return {"hub": _named(home), "targets": [asdict(check(target, home, policy, sessions)) for target in asked]}


def parse(targets: Any) -> list[Target]:
    """The targets of a request, each once; BadTargets naming the first entry that is not `{account, region}` with a
    12-digit account and a region, or a list longer than MAX_TARGETS."""
    if not isinstance(targets, list):
        raise BadTargets(f"targets: expected a list of {{account, region}}, got {type(targets).__name__}")
    if len(targets) > MAX_TARGETS:
        raise BadTargets(f"targets: {len(targets)} asked, at most {MAX_TARGETS} per call")
    parsed: dict[Target, None] = {}
    for index, entry in enumerate(targets):
        account = entry.get("account") if isinstance(entry, dict) else None
        region = entry.get("region") if isinstance(entry, dict) else None
        if not (isinstance(account, str) and ACCOUNT_RE.fullmatch(account)):
            raise BadTargets(f"targets[{index}]: account {account!r} is not 12 digits")
        if not (isinstance(region, str) and REGION_RE.fullmatch(region)):
            raise BadTargets(f"targets[{index}]: region {region!r} is not a region (e.g. eu-central-1)")
        parsed[Target(account, region)] = None
    return list(parsed)


def check(target: Target, home: Target, policy: TargetPolicy, sessions: TargetSessions) -> TargetCheck:
    """One target: the hub's own, one its settings do not allow (no call), one whose role it cannot assume, or one it
    reaches, with its target stack's status."""
    if target == home:
        return TargetCheck(target.account, target.region, True, True, HOME)
    refused = policy.refusal(target)
    if refused:
        return TargetCheck(target.account, target.region, False, why=refused)
    try:
        cloudformation = sessions.client("cloudformation", "", target)
    except TargetRefused as unreachable:
        return TargetCheck(target.account, target.region, True, False, why=unreachable.why)
    except (ClientError, BotoCoreError) as failed:  # e.g. a region not enabled in the account: this target's answer
        return TargetCheck(target.account, target.region, True, False, why=str(failed))
    return _with_stack(target, home, cloudformation)


def _with_stack(target: Target, home: Target, cloudformation: Any) -> TargetCheck:
    """A reachable target with its target stack's status, its Hub output, and what is wrong with them."""
    from clm.stacks.cfn import describe_stack

    found = TargetCheck(target.account, target.region, True, True)
    try:
        stack = describe_stack(cloudformation, TARGET_STACK)
    except (ClientError, BotoCoreError) as failed:  # this target's answer; the others are still checked
        return replace(found, why=str(failed))
    if stack is None:
        why = (
            f"no stack {TARGET_STACK} here, though the target role is (a StackSet instance has another name; else "
            f"{DEPLOY_HINT})"
        )
        return replace(found, stack="none", why=why)
    status = str(stack.get("StackStatus", ""))
    hub = next((o["OutputValue"] for o in stack.get("Outputs") or [] if o.get("OutputKey") == "Hub"), "")
    why = ""
    if hub != _named(home):
        why = f"stack {TARGET_STACK} names the hub {hub or '(none)'}, not this one ({_named(home)}): {DEPLOY_HINT}"
    elif status not in HEALTHY:
        why = f"stack {TARGET_STACK} is {status}, not {' or '.join(HEALTHY)}: see its events there"
    return replace(found, stack=status, stack_hub=hub, why=why)


def _named(target: Target) -> str:
    """`<account>:<region>`, as a target stack's output Hub names its hub (context clm:hub)."""
    return f"{target.account}:{target.region}"
