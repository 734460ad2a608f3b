"""IAM policy evaluation (clm_sandbox.iam.policy): AWS's rules for identity policies, boundaries and conditions."""

from __future__ import annotations

import pytest

from clm_sandbox.iam.policy import CannotJudge, Policy, Request, evaluate, wildcard_match

STACK = "arn:aws:cloudformation:eu-central-1:123456789012:stack/kube-1/abc"
GROUP = "arn:aws:autoscaling:eu-central-1:123456789012:autoScalingGroup:uuid:autoScalingGroupName/g"


def policy(*statements: dict, name: str = "p") -> Policy:
    return Policy(name, {"Version": "2012-10-17", "Statement": list(statements)})


def allow(action: str | list[str], resource: str | list[str] = "*", **extra: object) -> dict:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def test_an_action_no_statement_allows_is_denied_naming_it() -> None:
    decision = evaluate(Request("cloudformation:ListStacks", "*"), [policy(allow("cloudformation:DescribeStacks"))])
    assert not decision.allowed
    assert decision.reason == "no identity-based policy allows the cloudformation:ListStacks action"


def test_actions_match_case_insensitively_with_wildcards_resources_case_sensitively() -> None:
    identity = [policy(allow("CloudFormation:Describe*", "arn:aws:cloudformation:*:*:stack/kube-?/*"))]
    assert evaluate(Request("cloudformation:DescribeStacks", STACK), identity).allowed
    assert not evaluate(Request("cloudformation:DescribeStacks", STACK.replace("kube-1", "KUBE-1")), identity).allowed
    assert not evaluate(Request("cloudformation:DescribeStacks", STACK.replace("kube-1", "kube-10")), identity).allowed


def test_a_scoped_statement_does_not_allow_another_resource_nor_the_unscoped_star() -> None:
    identity = [policy(allow("states:SendTaskSuccess", "arn:aws:states:eu-central-1:123456789012:stateMachine:roll"))]
    assert not evaluate(Request("states:SendTaskSuccess", "*"), identity).allowed


def test_an_explicit_deny_wins_over_any_allow() -> None:
    identity = [
        policy(allow("iam:*")),
        policy({"Effect": "Deny", "Action": "iam:DeleteRole", "Resource": "*"}, name="d"),
    ]
    decision = evaluate(Request("iam:DeleteRole", "arn:aws:iam::123456789012:role/x"), identity)
    assert (decision.allowed, decision.reason) == (False, "an explicit deny in the identity-based policy d")


def test_not_action_and_not_resource() -> None:
    identity = [policy({"Effect": "Allow", "NotAction": "iam:*", "NotResource": "arn:aws:s3:::secret/*"})]
    assert evaluate(Request("s3:GetObject", "arn:aws:s3:::public/k"), identity).allowed
    assert not evaluate(Request("s3:GetObject", "arn:aws:s3:::secret/k"), identity).allowed
    assert not evaluate(Request("iam:GetRole", "*"), identity).allowed


def test_a_permissions_boundary_must_allow_too() -> None:
    identity = [policy(allow("iam:CreateRole", "*"))]
    boundary = policy(allow("s3:*"), name="boundary")
    decision = evaluate(Request("iam:CreateRole", "arn:aws:iam::123456789012:role/x"), identity, boundary)
    assert (decision.allowed, decision.reason) == (False, "no permissions boundary allows the iam:CreateRole action")


def tagged(tags: dict[str, str], action: str = "autoscaling:TerminateInstanceInAutoScalingGroup") -> Request:
    context = {f"aws:resourcetag/{k}": v for k, v in tags.items()}
    return Request(action, GROUP, context, frozenset({"aws:resourcetag/"}))


def test_null_condition_on_a_resource_tag() -> None:
    condition = {"Null": {"aws:ResourceTag/kubernetes.io/node-pool": "false"}}
    identity = [policy(allow("autoscaling:*", GROUP, Condition=condition))]
    assert evaluate(tagged({"kubernetes.io/node-pool": "workers"}), identity).allowed
    assert not evaluate(tagged({"other": "x"}), identity).allowed


@pytest.mark.parametrize(
    ("condition", "tags", "allowed"),
    [
        ({"StringEquals": {"aws:ResourceTag/team": ["a", "b"]}}, {"team": "b"}, True),
        ({"StringEquals": {"aws:ResourceTag/team": "a"}}, {"team": "A"}, False),
        ({"StringEqualsIgnoreCase": {"aws:ResourceTag/team": "a"}}, {"team": "A"}, True),
        ({"StringLike": {"aws:ResourceTag/team": "plat*"}}, {"team": "platform"}, True),
        ({"StringNotEquals": {"aws:ResourceTag/team": "a"}}, {}, True),  # a missing key is "not equal"
        ({"StringEquals": {"aws:ResourceTag/team": "a"}}, {}, False),
        ({"StringEqualsIfExists": {"aws:ResourceTag/team": "a"}}, {}, True),
        ({"StringEquals": {"aws:ResourceTag/team": "a", "aws:ResourceTag/env": "prod"}}, {"team": "a"}, False),
    ],
)
def test_string_conditions(condition: dict, tags: dict[str, str], allowed: bool) -> None:
    assert evaluate(tagged(tags), [policy(allow("autoscaling:*", GROUP, Condition=condition))]).allowed is allowed


def test_a_condition_key_the_request_does_not_compute_cannot_be_judged() -> None:
    identity = [policy(allow("s3:ListBucket", "*", Condition={"StringLike": {"s3:prefix": "config/*"}}))]
    with pytest.raises(CannotJudge, match="condition key s3:prefix"):
        evaluate(Request("s3:ListBucket", "arn:aws:s3:::b"), identity)


def test_an_unknown_operator_and_a_policy_variable_cannot_be_judged() -> None:
    request = tagged({"team": "a"})
    with pytest.raises(CannotJudge, match="operator DateGreaterThan"):
        evaluate(
            request, [policy(allow("autoscaling:*", GROUP, Condition={"DateGreaterThan": {"aws:ResourceTag/t": "x"}}))]
        )
    with pytest.raises(CannotJudge, match="policy variable"):
        wildcard_match("arn:aws:s3:::${aws:username}/*", "arn:aws:s3:::me/x")


def test_pass_role_to_one_service_only() -> None:
    identity = [
        policy(
            allow(
                "iam:PassRole",
                "arn:aws:iam::1:role/cfn",
                Condition={"StringEquals": {"iam:PassedToService": "cloudformation.amazonaws.com"}},
            )
        )
    ]

    def passing(service: str) -> Request:
        return Request(
            "iam:PassRole",
            "arn:aws:iam::1:role/cfn",
            {"iam:passedtoservice": service},
            frozenset({"iam:passedtoservice"}),
        )

    assert evaluate(passing("cloudformation.amazonaws.com"), identity).allowed
    assert not evaluate(passing("ec2.amazonaws.com"), identity).allowed
