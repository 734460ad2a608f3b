"""What deploying a stack spec would do, read without changing anything (for `clm plan`).

`stack_diff` compares the deployed stack with the rendered spec as `start` (deploy.py) would act on it: create
a missing stack, leave a current one alone, update one whose template, parameters or tags differ, and wait for,
recreate or repair a stack in another state. It shows a unified diff of the templates, the parameters and tags
that change (NoEcho values masked), whether a run sets the stack's policy (CLM's etcd stack keeps one) and, for a
node-pool stack, what the update changes in what its group launches.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from clm.render.cfn_yaml import load_template
from clm.stacks.cfn import describe_stack
from clm.stacks.deploy import policy_differs
from clm.stacks.errors import StackNotOwned
from clm.stacks.events import stack_status_count
from clm.stacks.launch import launch_changes
from clm.stacks.ownership import ensure_owned
from clm.stacks.spec import StackSpec
from clm.stacks.status import ROLLBACK_FAILED_UPDATE, ROLLED_BACK_CREATE, UPDATABLE, is_in_progress

Action = Literal["create", "no change", "update", "wait", "recreate", "recover", "attention", "delete"]
MASK = "****"  # how CloudFormation shows NoEcho parameter values

# What a run does with a stack, for each action.
ACTION_MEANINGS: dict[str, str] = {
    "create": "the stack does not exist: it is created",
    "no change": "template, parameters and tags are as deployed",
    "update": "the stack is updated",
    "wait": "an operation is in progress: the run waits for it, then updates the stack if it still differs",
    "recreate": "the node-pool stack's creation was rolled back: it is deleted and created again",
    "recover": "the failed update's rollback is continued, then the stack is updated",
    "attention": "the stack is in a state CLM does not repair by itself, or not CLM's: the run stops with a problem",
    "delete": "the node pool is gone from the cluster: its nodes are drained and the stack deleted",
}


@dataclass(frozen=True)
class ValueChange:
    """A parameter or tag whose value changes; None where it is absent."""

    name: str
    deployed: str | None
    rendered: str | None


@dataclass(frozen=True)
class StackDiff:
    """A stack's planned action, with what differs between the deployed and the rendered stack."""

    stack_name: str
    node_pool: str | None
    file: str
    action: Action
    status: str = ""
    template_diff: str = ""  # unified diff, deployed -> rendered; "" when the templates are the same
    parameters: list[ValueChange] = field(default_factory=list)
    tags: list[ValueChange] = field(default_factory=list)
    launch_changes: list[str] = field(default_factory=list)  # node-pool stacks: what changes what the group launches
    sets_policy: bool = False  # a run gives the stack the spec's policy (it has another or none)
    problem: str = ""  # why a run stops at this stack (action "attention"), when it is known before it starts

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return asdict(self)


def stack_diff(cfn: Any, spec: StackSpec) -> StackDiff:
    """The action a run takes on the spec's stack, and how the deployed stack differs from the spec."""
    stack = describe_stack(cfn, spec.name)
    if stack is None:
        return StackDiff(spec.name, spec.node_pool, spec.file, "create")
    try:
        ensure_owned(stack, spec.cluster_id, spec.owner_tags)
    except StackNotOwned as exc:  # the run changes nothing of it and stops (deploy.start)
        return StackDiff(spec.name, spec.node_pool, spec.file, "attention", stack["StackStatus"], problem=exc.message)
    deployed_body = cfn.get_template(StackName=stack["StackId"], TemplateStage="Original")["TemplateBody"]
    deployed_template = (load_template(deployed_body) if isinstance(deployed_body, str) else deployed_body) or {}
    deployed_text, rendered_text = template_texts(deployed_body, spec.body)
    masked = _no_echo(spec.template) | _no_echo(deployed_template)
    deployed_parameters = {p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])}
    parameters = value_changes(deployed_parameters, spec.parameters, masked)
    tags = value_changes({t["Key"]: t["Value"] for t in stack.get("Tags", [])}, spec.tags)
    template_diff = unified_diff(deployed_text, rendered_text, spec.name, spec.file or spec.name)
    changed_values = {change.name: (change.deployed, change.rendered) for change in parameters}
    launch = launch_changes(deployed_template, spec.template, changed_values) if spec.node_pool is not None else []
    sets_policy = bool(spec.policy) and policy_differs(cfn, stack["StackId"], spec.policy)
    changed = bool(template_diff or parameters or tags or sets_policy)
    return StackDiff(
        stack_name=spec.name,
        node_pool=spec.node_pool,
        file=spec.file,
        action=_action(cfn, spec, stack, changed),
        status=stack["StackStatus"],
        template_diff=template_diff,
        parameters=parameters,
        tags=tags,
        launch_changes=launch,
        sets_policy=sets_policy,
    )


def _action(cfn: Any, spec: StackSpec, stack: dict[str, Any], changed: bool) -> Action:
    """What `start` would do with the stack (see deploy.py and recovery.py)."""
    status = stack["StackStatus"]
    if is_in_progress(status):
        return "wait"
    if status in UPDATABLE:
        return "update" if changed else "no change"
    if status == ROLLED_BACK_CREATE and spec.node_pool is not None:
        return "recreate"
    if status == ROLLBACK_FAILED_UPDATE and stack_status_count(cfn, stack, status) < 2:
        return "recover"
    return "attention"


def template_texts(deployed: str | dict[str, Any], rendered_body: str) -> tuple[str, str]:
    """The deployed and the rendered template as comparable texts.

    boto3 hands JSON templates over parsed: those are compared as sorted, indented JSON.
    """
    if isinstance(deployed, str):
        return deployed, rendered_body
    try:
        rendered = json.loads(rendered_body)
    except ValueError:
        return _json_text(deployed), rendered_body
    return _json_text(deployed), _json_text(rendered)


def unified_diff(deployed: str, rendered: str, deployed_name: str, rendered_name: str) -> str:
    """A unified diff from the deployed to the rendered text, "" when they are the same."""
    lines = difflib.unified_diff(
        deployed.splitlines(keepends=True),
        rendered.splitlines(keepends=True),
        fromfile=f"{deployed_name} (deployed)",
        tofile=f"{rendered_name} (rendered)",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def value_changes(
    deployed: Mapping[str, str], rendered: Mapping[str, str], masked: frozenset[str] = frozenset()
) -> list[ValueChange]:
    """Every name whose value differs, by name; the values of `masked` names are shown as ****."""

    def shown(name: str, value: str | None) -> str | None:
        return MASK if value is not None and name in masked else value

    return [
        ValueChange(name, shown(name, deployed.get(name)), shown(name, rendered.get(name)))
        for name in sorted(deployed.keys() | rendered.keys())
        if deployed.get(name) != rendered.get(name)
    ]


def _no_echo(template: Mapping[str, Any]) -> frozenset[str]:
    declared = template.get("Parameters") or {}
    return frozenset(
        name
        for name, declaration in declared.items()
        if isinstance(declaration, dict) and str(declaration.get("NoEcho", "")).lower() == "true"
    )


def _json_text(template: Any) -> str:
    return json.dumps(template, indent=2, sort_keys=True) + "\n"
