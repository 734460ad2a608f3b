"""Context `clm:notify` / `clm:notifyTopicArn` (infra.notify): a rule on CLM's bus sends every rollout, cluster and
node event to an SNS topic; the topic made here lets only that rule publish, over TLS (its policy judged by the
sandbox's IAM evaluator); a user's topic is only named. The whole stack with `clm:notify`: tests/unit/test_infra.py."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_events as events
from aws_cdk.assertions import Template

from clm_sandbox.iam.policy import Policy, Request, policy_effect
from infra.context import ClmContext, ContextError
from infra.notify import SOURCES, Notifications

TOPIC = "arn:aws:sns:eu-central-1:123456789012:team-alerts"
MADE = "arn:aws:sns:eu-central-1:123456789012:Clm-NotifyTopic"
RULE = "arn:aws:events:eu-central-1:123456789012:rule/clm/Clm-NotifyRule"


def notifications(context: dict[str, Any]) -> dict[str, Any]:
    """The template of CLM's bus and its Notifications for `context`."""
    app = cdk.App(context=context)
    stack = cdk.Stack(app, "Clm", env=cdk.Environment(account="123456789012", region="eu-central-1"))
    bus = events.EventBus(stack, "Bus", event_bus_name="clm")
    Notifications(stack, "Notify", bus=bus, context=ClmContext.of(stack))
    return Template.from_stack(stack).to_json()


def of_type(raw: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: body for name, body in raw["Resources"].items() if body["Type"] == kind}


@pytest.mark.parametrize(
    ("context", "notify", "topic"),
    [
        ({}, False, None),
        ({"clm:notify": "true"}, True, None),
        ({"clm:notify": True}, True, None),
        ({"clm:notifyTopicArn": f" {TOPIC} "}, False, TOPIC),
    ],
)
def test_the_settings(context: dict[str, Any], notify: bool, topic: str | None) -> None:
    settings = ClmContext.of(cdk.App(context=context))
    assert (settings.notify, settings.notify_topic_arn) == (notify, topic)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"clm:notify": "yes"}, "clm:notify: expected true or false, got 'yes'"),
        ({"clm:notifyTopicArn": "team-alerts"}, "clm:notifyTopicArn: 'team-alerts' is not an SNS standard topic's"),
        ({"clm:notifyTopicArn": f"{TOPIC}.fifo"}, "clm:notifyTopicArn: .* is not an SNS standard topic's ARN"),
        ({"clm:notifyTopicArn": TOPIC, "clm:notify": True}, "clm:notify and clm:notifyTopicArn: give one"),
    ],
)
def test_unusable_settings_are_named(context: dict[str, Any], message: str) -> None:
    with pytest.raises(ContextError, match=message):
        ClmContext.of(cdk.App(context=context))


def test_a_topic_made_for_clm_gets_every_rollout_cluster_and_node_event_and_only_that_rule_publishes() -> None:
    raw = notifications({"clm:notify": True})
    [(topic_id, topic)] = of_type(raw, "AWS::SNS::Topic").items()
    [(rule_id, rule)] = of_type(raw, "AWS::Events::Rule").items()
    assert (
        rule["Properties"]["EventPattern"]
        == {"source": ["clm.rollout", "clm.cluster", "clm.node"]}
        == {"source": SOURCES}
    )
    assert rule["Properties"]["EventBusName"] == {"Ref": next(iter(of_type(raw, "AWS::Events::EventBus")))}
    assert rule["Properties"]["Targets"] == [{"Arn": {"Ref": topic_id}, "Id": "Target0"}]
    [policy] = of_type(raw, "AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [{"Ref": topic_id}]
    document = resolved(policy["Properties"]["PolicyDocument"], {topic_id: MADE, rule_id: RULE})

    def publish(source_arn: str, tls: bool = True) -> str | None:
        statements = [s for s in document["Statement"] if s["Principal"] in ("*", {"Service": "events.amazonaws.com"})]
        context = {"aws:sourcearn": source_arn, "aws:securetransport": str(tls).lower()}
        request = Request("sns:Publish", MADE, context, frozenset(context))
        return policy_effect(Policy("topic", {"Statement": statements}), request)

    assert publish(RULE) == "Allow"
    assert publish(RULE.replace("Clm-NotifyRule", "someone-elses")) is None  # another rule, another account's
    assert publish(RULE.replace("123456789012", "999999999999")) is None
    assert publish(RULE, tls=False) == "Deny"
    assert {"NotifyTopicArn", "NotifyRuleArn"} <= set(raw["Outputs"])
    assert "KmsMasterKeyId" not in topic.get("Properties", {})  # SSE: docs/events.md says why not


def test_a_users_topic_is_named_and_its_policy_left_to_its_owner() -> None:
    raw = notifications({"clm:notifyTopicArn": TOPIC})
    assert not of_type(raw, "AWS::SNS::Topic") and not of_type(raw, "AWS::SNS::TopicPolicy")
    [rule] = of_type(raw, "AWS::Events::Rule").values()
    assert rule["Properties"]["Targets"] == [{"Arn": TOPIC, "Id": "Target0"}]
    assert raw["Outputs"]["NotifyTopicArn"]["Value"] == TOPIC


def resolved(value: Any, names: dict[str, str]) -> Any:
    """`value` with each Ref and GetAtt Arn of a resource in `names` replaced by its ARN there."""
    if isinstance(value, dict):
        if set(value) == {"Ref"} and value["Ref"] in names:
            return names[value["Ref"]]
        if set(value) == {"Fn::GetAtt"} and value["Fn::GetAtt"][0] in names:
            return names[value["Fn::GetAtt"][0]]
        return {key: resolved(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [resolved(item, names) for item in value]
    return value
