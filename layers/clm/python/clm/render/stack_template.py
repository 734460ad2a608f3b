"""A rendered CloudFormation template parsed and checked, its errors naming the file and line to fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from clm.errors import RenderError
from clm.render.cfn_yaml import load_template
from clm.yamlutil import error_line, error_reason

if TYPE_CHECKING:
    from clm.render.environment import TemplateEnvironment


def parse_stack(
    env: TemplateEnvironment, file: str, body: str, context: dict[str, Any], cluster_id: str, prefix: str = ""
) -> tuple[str, dict[str, Any]]:
    """`(prefix + file, template)` of a template of `env` rendered to `body`; RenderError when it is not YAML/JSON (at
    the included file's line when an include broke it) or has no Resources section. `prefix`: the source's, in the
    file names of a combined snapshot."""
    try:
        template = load_template(body)
    except yaml.YAMLError as exc:
        from clm.render.include_blame import blame_include

        at = blame_include(env, file, body, error_line(exc), context, _parses) or (file, error_line(exc))
        reason = f"rendered template is not valid YAML/JSON: {error_reason(exc)}"
        raise RenderError(reason, prefix + at[0], at[1], cluster_id) from None
    if not isinstance(template, dict) or not isinstance(template.get("Resources"), dict):
        raise RenderError("rendered template has no Resources section", prefix + file, None, cluster_id)
    return prefix + file, template


def _parses(text: str) -> bool:
    """Whether a rendered stack template reads as YAML/JSON."""
    try:
        load_template(text)
    except yaml.YAMLError:
        return False
    return True
