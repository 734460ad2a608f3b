"""EventBridge rules start Step Functions executions and publish to SNS topics (moto 5.2.5 raises
NotImplementedError for such targets).

``install()`` wraps ``Rule.send_to_targets``, which moto's ``put_events`` calls for every rule of the event's bus
(the default bus and custom ones): a rule that is enabled and matches starts one execution per state machine
target, named with a fresh UUID as AWS does. The execution input is the target's ``Input`` if set, else its
``InputPath`` applied to the event, else its ``InputTransformer``'s result, else the event as AWS delivers it.
A topic gets the same input when its policy lets the rule publish (clm_sandbox.patches._events_sns). Other targets
go to moto's own code; disabled rules deliver nothing (moto delivered them anyway).
"""

from __future__ import annotations

import copy
import datetime
import json
import logging
import re
import uuid
from typing import Any

from clm_sandbox.patches import _events_sns
from clm_sandbox.patches._patching import original, replace

LOG = logging.getLogger(__name__)
_PATH_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]")


class InputPathError(ValueError):
    """An InputPath that is not a JSONPath EventBridge accepts, or that selects nothing."""


def install() -> None:
    """Wrap moto's ``Rule.send_to_targets`` (idempotent)."""
    from moto.events.models import Rule

    replace(Rule, "send_to_targets", _send_to_targets)


def _send_to_targets(self: Any, original_event: dict[str, Any], transform_input: bool = True) -> None:
    from moto.events.models import Rule

    if self.state != "ENABLED":
        return
    state_machines = [target for target in self.targets if _is_state_machine(target["Arn"])]
    topics = [target for target in self.targets if _events_sns.is_topic(target["Arn"])]
    if len(state_machines) + len(topics) < len(self.targets):
        others = copy.copy(self)
        others.targets = [target for target in self.targets if target not in state_machines + topics]
        original(Rule, "send_to_targets")(others, original_event, transform_input)
    if (state_machines or topics) and _matches(self, original_event):
        event = delivered_event(original_event)
        for target in state_machines:
            _start_execution(self.name, target, event, original_event)
        for target in topics:
            _events_sns.publish(self, target, target_input(target, event, original_event.get("ingestion-time", 0)))


def _matches(rule: Any, event: dict[str, Any]) -> bool:
    """As on AWS, a rule with a schedule and no event pattern matches no event (moto's empty pattern matches all)."""
    if rule.scheduled_expression and not rule.event_pattern._pattern:
        return False
    return rule.event_pattern.matches_event(event)


def _is_state_machine(arn: str) -> bool:
    parts = arn.split(":")
    return len(parts) > 6 and parts[2] == "states" and parts[5] == "stateMachine"


def delivered_event(event: dict[str, Any]) -> dict[str, Any]:
    """The event as EventBridge hands it to a target: ISO 8601 time, no moto-internal fields."""
    delivered = {key: value for key, value in event.items() if key != "ingestion-time"}
    delivered["time"] = _iso_time(event.get("time"))
    return delivered


def _iso_time(value: Any) -> Any:
    if isinstance(value, int | float):
        value = datetime.datetime.fromtimestamp(value, tz=datetime.UTC)
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value


def target_input(target: dict[str, Any], event: dict[str, Any], ingestion_time: float) -> str:
    """The JSON text a target receives for ``event``: Input, InputPath, InputTransformer or the event itself."""
    if target.get("Input") is not None:
        return target["Input"]
    if target.get("InputPath"):
        return json.dumps(select(event, target["InputPath"]))
    if target.get("InputTransformer"):
        from moto.events.utils import EventTemplateParser

        transformer = target["InputTransformer"]
        transformed = EventTemplateParser.parse(
            input_template=transformer["InputTemplate"],
            input_paths_map=transformer.get("InputPathsMap", {}),
            event={**event, "ingestion-time": ingestion_time},
        )
        return json.dumps(transformed)
    return json.dumps(event)


def select(document: Any, path: str) -> Any:
    """Apply an EventBridge InputPath (``$``, ``$.a.b``, ``$.a[0]``, ``$['a b']``) to a document."""
    if not path.startswith("$"):
        raise InputPathError(f"InputPath {path!r} must start with '$'")
    position, value = 1, document
    while position < len(path):
        step = _PATH_STEP.match(path, position)
        if step is None:
            raise InputPathError(f"InputPath {path!r}: cannot parse at {path[position:]!r}")
        name, index, quoted = step.groups()
        try:
            value = value[int(index)] if index is not None else value[name if name is not None else quoted]
        except (KeyError, IndexError, TypeError) as exc:
            raise InputPathError(f"InputPath {path!r} selects nothing in the event") from exc
        position = step.end()
    return value


def _start_execution(rule: str, target: dict[str, Any], event: dict[str, Any], original_event: dict[str, Any]) -> None:
    from moto.stepfunctions.responses import get_backend

    arn = target["Arn"]
    _, _, _, region, account, *_ = arn.split(":")
    try:
        execution_input = target_input(target, event, original_event.get("ingestion-time", 0))
        get_backend(account, region).start_execution(arn, name=str(uuid.uuid4()), execution_input=execution_input)
    except Exception as exc:  # a target that cannot be invoked is a failed invocation, never a PutEvents error
        LOG.warning("rule %s: target %s (%s) not invoked: %s", rule, target.get("Id"), arn, exc)
