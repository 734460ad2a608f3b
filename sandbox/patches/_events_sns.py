"""An EventBridge rule's SNS topic target, as AWS delivers to it: only when the topic's policy lets EventBridge
publish (``events.amazonaws.com``, or everyone, allowed ``sns:Publish`` with the rule's ARN as ``aws:SourceArn``,
its account as ``aws:SourceAccount``, over TLS), the event as the message. moto 5.2.5 raises NotImplementedError
for such a target. A refused or failed delivery is a failed invocation, logged, never a PutEvents error."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from clm_sandbox.iam.policy import CannotJudge, Policy, Request, policy_effect

LOG = logging.getLogger(__name__)
EVENTS = "events.amazonaws.com"


def is_topic(arn: str) -> bool:
    """Whether `arn` is an SNS topic's."""
    parts = arn.split(":")
    return len(parts) == 6 and parts[2] == "sns"


def publish(rule: Any, target: Mapping[str, Any], message: str) -> bool:
    """Publish `message` (the target's input) to the target's topic if its policy lets `rule` publish; whether it
    was delivered."""
    from moto.sns.models import sns_backends

    arn = target["Arn"]
    _, _, _, region, account, _ = arn.split(":")
    backend = sns_backends[account][region]
    try:
        topic = backend.get_topic(arn)
        if not allows(json.loads(topic.policy), arn, rule.arn, rule.account_id):
            LOG.warning("rule %s: topic %s does not let EventBridge publish (its policy)", rule.name, arn)
            return False
        backend.publish(message, arn=arn)
    except Exception as exc:  # a target that cannot be invoked is a failed invocation, never a PutEvents error
        LOG.warning("rule %s: target %s (%s) not invoked: %s", rule.name, target.get("Id"), arn, exc)
        return False
    return True


def allows(document: Mapping[str, Any], topic_arn: str, rule_arn: str, account: str) -> bool:
    """Whether a topic policy lets EventBridge publish for the rule `rule_arn` of `account` (TLS, as EventBridge
    always calls); a statement the sandbox cannot judge allows nothing."""
    statements = [s for s in Policy("topic", document).statements() if _names_eventbridge(s.get("Principal"))]
    context = {"aws:sourcearn": rule_arn, "aws:sourceaccount": account, "aws:securetransport": "true"}
    request = Request("sns:Publish", topic_arn, context, frozenset(context))
    try:
        return policy_effect(Policy("topic", {"Statement": statements}), request) == "Allow"
    except CannotJudge as exc:
        LOG.warning("topic %s: policy not judged: %s", topic_arn, exc)
        return False


def _names_eventbridge(principal: Any) -> bool:
    if principal == "*":
        return True
    services = principal.get("Service", []) if isinstance(principal, Mapping) else []
    return EVENTS in ([services] if isinstance(services, str) else services)
