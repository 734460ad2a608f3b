"""What a CloudFormation template's resources refer to, the order to deploy them in, and the reference errors
CloudFormation refuses a template for (before it touches any resource).

Pure functions over parsed templates (moto's parsing gives ``{"Ref": ...}``, ``{"Fn::GetAtt": [...]}``,
``{"Fn::Sub": ...}``); no moto state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

PSEUDO_PREFIX = "AWS::"
_SUB_VARIABLE = re.compile(r"\$\{([^!}][^}]*)\}")  # ${Name} or ${Name.Attribute}, not the literal ${!Text}


class TemplateError(ValueError):
    """A template CloudFormation rejects: a reference to nothing, or resources that depend on each other."""


def references(node: Any) -> set[str]:
    """Logical ids (resources or parameters) that ``node`` refers to through Ref, Fn::GetAtt or Fn::Sub."""
    return {name for name, _ in _references(node)}


def resource_dependencies(resource: Mapping[str, Any], resource_ids: set[str]) -> set[str]:
    """The resources (among ``resource_ids``) one resource needs first: its references and its DependsOn."""
    return (references(resource) | depends_on(resource)) & resource_ids


def depends_on(resource: Mapping[str, Any]) -> set[str]:
    """The names in a resource's DependsOn (a name or a list of names)."""
    names = resource.get("DependsOn") or []
    return {names} if isinstance(names, str) else set(names)


def deployment_order(resources: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The resources' logical ids, each after everything it depends on (template order where free).

    Raises TemplateError naming the resources of a dependency cycle.
    """
    ids = set(resources)
    needs = {name: resource_dependencies(resource, ids) for name, resource in resources.items()}
    order: list[str] = []
    done: set[str] = set()
    while len(order) < len(resources):
        ready = [name for name in resources if name not in done and needs[name] <= done]
        if not ready:
            cycle = sorted(name for name in resources if name not in done)
            raise TemplateError(f"Circular dependency between resources: [{', '.join(cycle)}]")
        order.extend(ready)
        done.update(ready)
    return order


def check(template: Mapping[str, Any], parameter_names: Iterable[str]) -> None:
    """Raise TemplateError for what CloudFormation's validation refuses before it touches a resource.

    A parameter without default and without value, or a value for an undeclared parameter; a Ref or ${...} to a
    name that is neither a parameter, a resource nor a pseudo parameter; a Fn::GetAtt of a resource the template
    does not declare; a DependsOn on a resource it does not declare; a dependency cycle.
    """
    declared = template.get("Parameters") or {}
    given = set(parameter_names)
    missing = sorted(name for name, spec in declared.items() if name not in given and "Default" not in spec)
    if missing:
        raise TemplateError(f"Parameters: [{', '.join(missing)}] must have values")
    unknown = sorted(given - set(declared))
    if unknown:
        raise TemplateError(f"Parameters: [{', '.join(unknown)}] do not exist in the template")
    resources = template.get("Resources") or {}
    known = set(resources) | set(declared)
    for resource in resources.values():
        for name in sorted(depends_on(resource) - set(resources)):
            raise TemplateError(_unresolved(name, "Resources"))
    for section in ("Resources", "Outputs"):
        for name, kind in _references(template.get(section) or {}):
            if kind == "GetAtt" and name not in resources:
                raise TemplateError(f"Template error: instance of Fn::GetAtt references undefined resource {name}")
            if name not in known and not name.startswith(PSEUDO_PREFIX):
                raise TemplateError(_unresolved(name, section))
    deployment_order(resources)


def _unresolved(name: str, section: str) -> str:
    return f"Template format error: Unresolved resource dependencies [{name}] in the {section} block of the template"


def _references(node: Any, local: frozenset[str] = frozenset()) -> Iterator[tuple[str, str]]:
    """(name, kind) for every reference inside ``node``; ``local`` are Fn::Sub variables that shadow names."""
    if isinstance(node, list):
        for item in node:
            yield from _references(item, local)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key == "Ref" and isinstance(value, str):
            if value not in local:
                yield value, "Ref"
        elif key == "Fn::GetAtt":
            target = value.split(".", 1)[0] if isinstance(value, str) else value[0]
            if isinstance(target, str):
                yield target, "GetAtt"
            else:  # a GetAtt with a computed resource name
                yield from _references(value, local)
        elif key == "Fn::Sub":
            yield from _sub_references(value, local)
        else:
            yield from _references(value, local)


def _sub_references(value: Any, local: frozenset[str]) -> Iterator[tuple[str, str]]:
    text, variables = (value[0], value[1]) if isinstance(value, list) else (value, {})
    yield from _references(variables, local)
    shadowed = local | set(variables)
    if isinstance(text, str):
        for match in _SUB_VARIABLE.finditer(text):
            name, _, attribute = match.group(1).strip().partition(".")
            if name not in shadowed:
                yield name, "GetAtt" if attribute else "Ref"
