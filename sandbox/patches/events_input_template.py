"""EventBridge InputTransformer templates are filled as AWS fills them.

moto 5.2.5 pastes a string value into the template as it is, so the JSON template CDK writes for
``RuleTargetInput.from_object({"cluster_id": EventField.from_path("$.detail.cluster_id")})``, which is
``{"cluster_id":<detail-cluster_id>}``, becomes invalid JSON and the target is never invoked. AWS puts a value
in unquoted as JSON (a string gets its quotes) and inside a string literal as text. ``install()`` replaces
moto's ``EventTemplateParser.parse`` (which the events_targets patch and moto's own targets use).
"""

from __future__ import annotations

import json
import re
from typing import Any

from clm_sandbox.patches._patching import replace

_PLACEHOLDER = re.compile(r"<([A-Za-z0-9_.\-]+)>")


def install() -> None:
    """Replace moto's InputTransformer template filling (idempotent)."""
    from moto.events.utils import EventTemplateParser

    replace(EventTemplateParser, "parse", staticmethod(parse))


def parse(input_template: str, input_paths_map: dict[str, Any], event: dict[str, Any]) -> Any:
    """The transformed input: JSON when the filled template is JSON, else the filled text."""
    from moto.events.utils import EventTemplateParser

    template = input_template or EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE
    paths = input_paths_map or EventTemplateParser.DEFAULT_EVENT_INPUT_PATHS_MAP
    values = {name: _select(event, path) for name, path in paths.items()}
    values["aws.events.event.json"] = {key: value for key, value in event.items() if key != "ingestion-time"}
    values["aws.events.event.ingestion-time"] = event.get("ingestion-time")
    filled = fill(template, values)
    try:
        return json.loads(filled)
    except ValueError:
        return filled


def fill(template: str, values: dict[str, Any]) -> str:
    """Replace each known ``<name>``: as JSON outside string literals, as escaped text inside them."""
    out: list[str] = []
    in_string, position = False, 0
    while position < len(template):
        char = template[position]
        if in_string and char == "\\":
            out.append(template[position : position + 2])
            position += 2
            continue
        if char == '"':
            in_string = not in_string
        match = _PLACEHOLDER.match(template, position) if char == "<" else None
        if match and match.group(1) in values:
            value = values[match.group(1)]
            out.append(_as_text(value) if in_string else json.dumps(value))
            position = match.end()
            continue
        out.append(char)
        position += 1
    return "".join(out)


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value)
    return json.dumps(text)[1:-1]


def _select(event: dict[str, Any], path: str) -> Any:
    from jsonpath_ng.ext import parse as jsonpath

    matches = jsonpath(path).find(event)
    return matches[0].value if matches else None
