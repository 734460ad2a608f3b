"""What to deploy as one stack: name, template, tags, explicit parameters and capabilities."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clm.stacks.errors import InvalidStackSpec
from clm.stacks.names import (
    cluster_stack_name,
    cluster_stack_tags,
    node_pool_stack_name,
    node_pool_stack_tags,
    owned_tags,
)

if TYPE_CHECKING:
    from clm.render.renderer import RenderedCluster, RenderedStack


@dataclass(frozen=True)
class StackSpec:
    """A rendered stack ready for CloudFormation. `node_pool` is None for the cluster stack."""

    cluster_id: str
    name: str
    body: str
    template: dict[str, Any]
    tags: dict[str, str]
    parameters: dict[str, str]
    node_pool: str | None = None
    file: str = ""
    owner_tags: dict[str, str] | None = None  # checked before a change; None: the cluster's (ownership.owned_tags)
    policy: str = ""  # the stack policy (JSON) the stack keeps; "": none set

    @property
    def capabilities(self) -> list[str]:
        """Named IAM always; AUTO_EXPAND when the template uses a transform (macro, SAM, Include)."""
        expands = "Transform" in self.template or _uses_fn_transform(self.template)
        return ["CAPABILITY_NAMED_IAM", *(["CAPABILITY_AUTO_EXPAND"] if expands else [])]

    def api_parameters(self) -> list[dict[str, str]]:
        """Parameters in the API's shape, every one with an explicit value."""
        return [{"ParameterKey": key, "ParameterValue": value} for key, value in sorted(self.parameters.items())]

    def api_tags(self) -> list[dict[str, str]]:
        """Tags in the API's shape."""
        return [{"Key": key, "Value": value} for key, value in sorted(self.tags.items())]


def cluster_stack_spec(rendered: RenderedCluster, parameters: Mapping[str, str] | None = None) -> StackSpec:
    """The cluster stack of a rendered cluster."""
    cluster = rendered.cluster
    return stack_spec(
        rendered.cluster_stack,
        cluster.id,
        cluster_stack_name(cluster),
        cluster_stack_tags(cluster.id),
        parameters,
        None,
    )


def node_pool_stack_spec(
    rendered: RenderedCluster, pool_name: str, parameters: Mapping[str, str] | None = None
) -> StackSpec:
    """The stack of one node pool of a rendered cluster."""
    cluster = rendered.cluster
    pool = cluster.node_pool(pool_name)
    return stack_spec(
        rendered.node_pool_stacks[pool_name],
        cluster.id,
        node_pool_stack_name(cluster.id, pool_name),
        node_pool_stack_tags(cluster.name, pool),
        parameters,
        pool_name,
        owned_tags(cluster.name),
    )


def stack_spec(
    stack: RenderedStack,
    cluster_id: str,
    name: str,
    tags: dict[str, str],
    given: Mapping[str, str] | None = None,
    node_pool: str | None = None,
    owner_tags: dict[str, str] | None = None,
) -> StackSpec:
    """The spec of a rendered stack named `name`: `tags` over the template's Metadata.Tags, a value for every
    parameter (`given`, else its default), `owner_tags` checked before a change (None: the cluster id's)."""
    return StackSpec(
        cluster_id=cluster_id,
        name=name,
        body=stack.body,
        template=stack.template,
        tags={**template_tags(stack.template), **tags},
        parameters=explicit_parameters(stack.template, given or {}, cluster_id, name),
        node_pool=node_pool,
        file=stack.file,
        owner_tags=owner_tags,
    )


def template_tags(template: Mapping[str, Any]) -> dict[str, str]:
    """The template's `Metadata.Tags`, which CLM puts on the stack under its own (provisioner/aws.go
    tagsFromStackTemplate): Zalando's stacks carry theirs, and an update without them would drop them."""
    metadata = template.get("Metadata")
    tags = metadata.get("Tags") if isinstance(metadata, dict) else None
    return {str(key): _parameter_text(value) for key, value in tags.items()} if isinstance(tags, dict) else {}


def explicit_parameters(
    template: Mapping[str, Any], given: Mapping[str, str], cluster_id: str, stack_name: str
) -> dict[str, str]:
    """A value for every template parameter: the given one, else the template's default.

    Explicit values keep updates independent of previous values (moto rejects UsePreviousValue on defaulted
    parameters, and CloudFormation would keep a stale value when a default changes).
    """
    declared = template.get("Parameters") or {}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise InvalidStackSpec(
            f"parameters {', '.join(unknown)} are not declared in the template", cluster_id, stack_name
        )
    values: dict[str, str] = {}
    for key, declaration in declared.items():
        if key in given:
            values[key] = given[key]
        elif isinstance(declaration, dict) and "Default" in declaration:
            values[key] = _parameter_text(declaration["Default"])
        else:
            raise InvalidStackSpec(
                f"template parameter {key} has no default and no value was given", cluster_id, stack_name
            )
    return values


def _parameter_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_parameter_text(item) for item in value)
    return str(value)


def _uses_fn_transform(node: Any) -> bool:
    if isinstance(node, dict):
        return "Fn::Transform" in node or any(_uses_fn_transform(v) for v in node.values())
    if isinstance(node, list):
        return any(_uses_fn_transform(item) for item in node)
    return False
