"""The run function's step check_targets (`clm targets`), called through its real handler as the hub's run role, on
the sandbox's moto with IAM enforced (tests/unit/hub_stand_in.py): each target is the hub's own, one the hub's
settings do not allow (no AssumeRole), one whose target role it cannot assume (none there), or one it reaches, with
its target stack's status and the hub that stack names.

What a registry writer (whose accounts and regions `clm targets` sends) or anyone invoking the function could ask is
checked before any AWS call: a malformed account or region, more than MAX_TARGETS targets, and no AssumeRole in an
account outside the hub's settings, however many are asked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from clm.targets import DEPLOY_HINT, Target
from clm.workflow.target_check import MAX_TARGETS, BadTargets
from clm_sandbox.iam import principals
from tests.lambdas import FakeContext, load_handler_module
from tests.unit.hub_stand_in import HUB, RUN_ROLE, deploy_hub, deploy_target

SETTINGS = {"CLM_TARGET_ACCOUNTS": "222222222222,333333333333"}
HUB_NAMED = f"{HUB.account}:{HUB.region}"
ROLE = "arn:aws:iam::{account}:role/clm-target-{region}-run"
NOT_ALLOWED = "account 999999999999 is not one this deployment may reach (clm:targetAccounts: {})".format(
    "123456789012, 222222222222, 333333333333"
)


def no_role(target: Target) -> str:
    role = ROLE.format(account=target.account, region=target.region)
    return f"the hub cannot assume {role} (AccessDenied): {DEPLOY_HINT}"


TARGET = Target("222222222222", "eu-west-1")
EXPECTED = {  # target -> (allowed, reachable, stack, its Hub output, why)
    HUB: (True, True, "hub", "", ""),
    TARGET: (True, True, "CREATE_COMPLETE", HUB_NAMED, ""),
    Target("222222222222", "eu-central-1"): (
        True,
        True,
        "none",
        "",
        "no stack ClmTarget here, though the target role is (a StackSet instance has another name; else "
        f"{DEPLOY_HINT})",
    ),
    Target("222222222222", "us-east-1"): (
        True,
        True,
        "CREATE_COMPLETE",
        "123456789012:eu-west-1",
        f"stack ClmTarget names the hub 123456789012:eu-west-1, not this one ({HUB_NAMED}): {DEPLOY_HINT}",
    ),
    Target("333333333333", "eu-west-1"): (True, False, "", "", no_role(Target("333333333333", "eu-west-1"))),
    Target("123456789012", "us-east-1"): (True, False, "", "", no_role(Target("123456789012", "us-east-1"))),
    Target("999999999999", "eu-west-1"): (False, None, "", "", NOT_ALLOWED),
}


@pytest.fixture
def as_hub(sandbox_aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The targets of EXPECTED deployed, and this process acting as the hub's run function (its role's session, its
    settings); yields the role ARNs the hub's STS client is asked to assume."""
    deploy_targets(sandbox_aws)
    deploy_hub(sandbox_aws, SETTINGS)
    yield from acting_as_hub(monkeypatch, SETTINGS)


def deploy_targets(sandbox: boto3.Session) -> None:
    """The target roles and stacks of EXPECTED: in 222222222222, eu-central-1's role from a StackSet instance."""
    deploy_target(sandbox, TARGET, HUB_NAMED)
    deploy_target(sandbox, Target("222222222222", "eu-central-1"), HUB_NAMED, stack="StackSet-clm-target-0a1b2c")
    deploy_target(sandbox, Target("222222222222", "us-east-1"), "123456789012:eu-west-1")


def acting_as_hub(monkeypatch: pytest.MonkeyPatch, settings: dict[str, str]) -> Iterator[list[str]]:
    """This process as the hub's run function: its role's session (judged by the sandbox's IAM) and `settings`;
    yields the role ARNs asked of AssumeRole."""
    from clm.aws import client, forget_clients

    role = f"arn:aws:iam::{HUB.account}:role/{RUN_ROLE}"
    for name, value in {**principals.role_session(role, "clm-run", HUB.region), **settings}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CLM_TARGET_ROLE", "clm-target-{region}-run")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    forget_clients()
    assumed: list[str] = []
    client("sts").meta.events.register(
        "provide-client-params.sts.AssumeRole", lambda params, **_: assumed.append(params["RoleArn"])
    )
    yield assumed
    forget_clients()


def call(targets: Any) -> dict[str, Any]:
    handler = load_handler_module("run").handler
    return handler({"step": "check_targets", "targets": targets}, FakeContext())


def asked(*targets: Target) -> list[dict[str, str]]:
    return [{"account": t.account, "region": t.region} for t in targets]


def test_each_target_is_the_hubs_own_not_allowed_unreachable_or_reached_with_its_stack(as_hub: list[str]) -> None:
    answer = call(asked(*EXPECTED))
    assert answer["hub"] == HUB_NAMED
    found = {Target(c["account"], c["region"]): c for c in answer["targets"]}
    assert list(found) == list(EXPECTED)  # in the order asked
    assert {
        target: (c["allowed"], c["reachable"], c["stack"], c["stack_hub"], c["why"]) for target, c in found.items()
    } == EXPECTED
    tried = [t for t, expected in EXPECTED.items() if expected[1] is not None and t != HUB]
    assert as_hub == [ROLE.format(account=t.account, region=t.region) for t in tried]  # each assumed now, once


def test_a_target_asked_twice_is_checked_once(as_hub: list[str]) -> None:
    answer = call(asked(TARGET, TARGET, HUB, TARGET))
    assert [Target(c["account"], c["region"]) for c in answer["targets"]] == [TARGET, HUB]
    assert len(as_hub) == 1


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        (None, "targets: expected a list of {account, region}, got NoneType"),
        ({"account": "222222222222", "region": "eu-west-1"}, "targets: expected a list of {account, region}, got dict"),
        (["222222222222:eu-west-1"], "targets[0]: account None is not 12 digits"),
        ([{"account": "22222222222", "region": "eu-west-1"}], "targets[0]: account '22222222222' is not 12 digits"),
        ([{"account": 222222222222, "region": "eu-west-1"}], "targets[0]: account 222222222222 is not 12 digits"),
        ([{"account": "222222222222\n", "region": "eu-west-1"}], "targets[0]: account '222222222222\\n' is not 12"),
        ([{"account": "*", "region": "eu-west-1"}], "targets[0]: account '*' is not 12 digits"),
        ([{"account": "222222222222:role/x", "region": "eu-west-1"}], "targets[0]: account '222222222222:role/x'"),
        ([{"account": "222222222222", "region": "*"}], "targets[0]: region '*' is not a region"),
        ([{"account": "222222222222", "region": "eu-west-1-run/../x"}], "targets[0]: region 'eu-west-1-run/../x'"),
        ([{"account": "222222222222", "region": "eu-west-1\n"}], "targets[0]: region 'eu-west-1\\n' is not a region"),
        ([{"account": "222222222222"}], "targets[0]: region None is not a region"),
        (
            [{"account": "222222222222", "region": "eu-west-1"}, {"account": "2", "region": "eu-west-1"}],
            "targets[1]: account '2' is not 12 digits",
        ),
        (
            [{"account": f"2{n:011d}", "region": "eu-west-1"} for n in range(MAX_TARGETS + 1)],
            f"targets: {MAX_TARGETS + 1} asked, at most {MAX_TARGETS} per call",
        ),
    ],
)
def test_a_malformed_or_oversized_request_is_refused_before_any_call(
    as_hub: list[str], targets: Any, message: str
) -> None:
    """Nothing of a bad request is checked: not its well-formed entries either (the hub assumes nothing)."""
    with pytest.raises(BadTargets) as refused:
        call(targets)
    assert str(refused.value).startswith(message)
    assert as_hub == []


@pytest.fixture
def as_open_hub(sandbox_aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The hub allowing any account (its IAM lets it assume in any) but narrowed by its include and exclude."""
    settings = {"CLM_TARGET_ACCOUNTS": "*", "CLM_TARGET_INCLUDE": r"2\d{11}", "CLM_TARGET_EXCLUDE": "222222222299"}
    deploy_target(sandbox_aws, TARGET, HUB_NAMED)
    deploy_hub(sandbox_aws, settings)
    yield from acting_as_hub(monkeypatch, settings)


def test_a_registry_naming_any_accounts_makes_the_hub_assume_only_where_its_settings_allow(
    as_open_hub: list[str],
) -> None:
    """With clm:targetAccounts=*, IAM would let the hub assume a role in any account: the settings are applied first."""
    outside = [Target(f"9{n:011d}", "eu-west-1") for n in range(MAX_TARGETS - 2)] + [
        Target("222222222299", "eu-west-1")
    ]
    answer = call(asked(*outside, TARGET))
    whys = {c["account"]: c["why"] for c in answer["targets"] if not c["allowed"]}
    assert len(whys) == MAX_TARGETS - 1
    assert whys["900000000000"] == r"account 900000000000 does not match clm:targetInclude 2\d{11}"
    assert whys["222222222299"] == "account 222222222299 matches clm:targetExclude 222222222299"
    assert all(c["reachable"] is None and c["stack"] == "" for c in answer["targets"] if not c["allowed"])
    assert as_open_hub == [ROLE.format(account=TARGET.account, region=TARGET.region)]


def test_the_run_function_serves_the_step() -> None:
    from clm.workflow.run_steps import STEPS
    from clm.workflow.target_check import check_targets

    assert STEPS["check_targets"] is check_targets


class Stacks:
    """A target's CloudFormation answering DescribeStacks with one stack of `status` (moto's stacks never stay in a
    rolled-back or in-progress state)."""

    def __init__(self, status: str) -> None:
        self.status = status

    def describe_stacks(self, **named: str) -> dict[str, Any]:
        outputs = [{"OutputKey": "Hub", "OutputValue": HUB_NAMED}]
        return {"Stacks": [{"StackName": named["StackName"], "StackStatus": self.status, "Outputs": outputs}]}


@pytest.mark.parametrize("status", ["UPDATE_ROLLBACK_COMPLETE", "UPDATE_IN_PROGRESS"])
def test_a_target_stack_not_complete_is_named_with_its_status(status: str) -> None:
    from clm.workflow.target_check import _with_stack

    found = _with_stack(TARGET, HUB, Stacks(status))
    assert (found.reachable, found.stack, found.stack_hub) == (True, status, HUB_NAMED)
    assert found.why == f"stack ClmTarget is {status}, not CREATE_COMPLETE or UPDATE_COMPLETE: see its events there"
    assert _with_stack(TARGET, HUB, Stacks("UPDATE_COMPLETE")).why == ""
