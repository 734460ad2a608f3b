"""Routing CLM's lifecycle events to an SNS topic, so that a team gets notified (context `clm:notify` makes the topic,
`clm:notifyTopicArn` names one of the user's): a rule on CLM's bus and, for a topic made here, the policy that lets
that rule, and nothing else, publish. docs/events.md lists the events and says why all of them go."""

from __future__ import annotations

from typing import Any

import jsii
from aws_cdk import CfnOutput
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.context import ClmContext
from infra.nag import acknowledge

# Every source of CLM's lifecycle events; `clm.registry` (Cluster Changed) starts CLM's own runs and is left out.
SOURCES = ["clm.rollout", "clm.cluster", "clm.node"]
EVENTS = "events.amazonaws.com"


@jsii.implements(events.IRuleTarget)
class _TopicTarget:
    """A rule's target that is the topic's ARN alone: the topic's policy is written here, with the rule's ARN as its
    condition (CDK's SnsTopic would let every rule of every account publish)."""

    def __init__(self, topic_arn: str):
        self.topic_arn = topic_arn

    def bind(self, _rule: events.IRule, _id: str | None = None) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(arn=self.topic_arn)


class Notifications(Construct):
    """The rule sending every event of SOURCES on `bus` to the topic: made here (`clm:notify`) or the user's
    (`clm:notifyTopicArn`, whose policy its owner writes: docs/events.md); outputs NotifyTopicArn, NotifyRuleArn."""

    def __init__(self, scope: Construct, construct_id: str, *, bus: events.IEventBus, context: ClmContext) -> None:
        super().__init__(scope, construct_id)
        self.topic = self._topic(context)
        self.rule = events.Rule(
            self,
            "Rule",
            event_bus=bus,
            event_pattern=events.EventPattern(source=SOURCES),
            description="CLM: its rollouts', clusters' and nodes' events -> the notification topic",
        )
        self.rule.add_target(_TopicTarget(self.topic.topic_arn))
        if context.notify:
            self.topic.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="ClmEventsPublish",
                    principals=[iam.ServicePrincipal(EVENTS)],
                    actions=["sns:Publish"],
                    resources=[self.topic.topic_arn],
                    conditions={"ArnEquals": {"aws:SourceArn": self.rule.rule_arn}},
                )
            )
        CfnOutput(scope, "NotifyTopicArn", value=self.topic.topic_arn)
        CfnOutput(scope, "NotifyRuleArn", value=self.rule.rule_arn)

    def _topic(self, context: ClmContext) -> Any:
        if context.notify_topic_arn:
            return sns.Topic.from_topic_arn(self, "Topic", context.notify_topic_arn)
        topic = sns.Topic(self, "Topic", display_name="CLM", enforce_ssl=True)
        acknowledge(
            topic,
            "SNS2",
            "CLM's events carry no secret (docs/events.md), and EventBridge and AWS Chatbot cannot use an AWS managed "
            "key; a team that wants its topic encrypted gives it with clm:notifyTopicArn",
        )
        return topic


def wanted(context: ClmContext) -> bool:
    """Whether the context asks for the notification topic's rule."""
    return context.notify or context.notify_topic_arn is not None
