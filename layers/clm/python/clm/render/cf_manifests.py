"""`cluster/cf-manifests/`: a cluster's extra CloudFormation stacks, and `cf-deletions.yaml`: stacks to delete.

As CLM (provisioner/clusterpy.go applyCFManifests, parseCFDeletions; channel/simple_config.go CFManifests): every
`*.yaml`/`*.yml` file directly in `cluster/cf-manifests/` but `cf-deletions.yaml` is a template, rendered with the
cluster and its values and deployed, in file order, as the stack its `Metadata.StackName` names; a file that renders
to nothing (comments, blank lines) is skipped. `cf-deletions.yaml` lists `pre_apply` and `post_apply` entries of the
form `{stackName: NAME}`. With several sources, the files of every source count (channel/combined.go), in source order.

Checked here, before any AWS call, each problem naming the file and line: the template parses and has Resources;
StackName is a CloudFormation stack name; no StackName is given twice; no StackName and no deletion names the
cluster's own stack, CLM's etcd stack or a node-pool stack (`nodepool-*`: CLM finds removed pools' stacks by that
name, so an extra stack named so would be drained and deleted as a pool); no stack is both applied and deleted.
Stacks of other clusters and of anyone else are refused at deploy and delete by their tags (clm.stacks.extra).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clm.errors import RenderError
from clm.render.deletions import PHASES, phase_entries
from clm.stacks.names import NODE_POOL_STACK_PREFIX

if TYPE_CHECKING:
    from clm.render.renderer import RenderedStack

CF_MANIFESTS = "cluster/cf-manifests/"
CF_DELETIONS = CF_MANIFESTS + "cf-deletions.yaml"
SUFFIXES = (".yaml", ".yml")
ETCD_STACK_NAME = "etcd-cluster-etcd"  # CLM's etcdStackNameDefault (clm.stacks.etcd)
STACK_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,127}")
_STACK_NAME_LINE = re.compile(r"^\s*StackName\s*:", re.MULTILINE)
_CONTENT = re.compile(r"^\s*[^#\s]", re.MULTILINE)


@dataclass(frozen=True)
class CFDeletions:
    """The stacks cf-deletions.yaml deletes before and after applying manifests, by name."""

    pre_apply: list[str] = field(default_factory=list)
    post_apply: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, list[dict[str, str]]]:
        """Plain dict in cf-deletions.yaml's format."""
        return {phase: [{"stackName": name} for name in getattr(self, phase)] for phase in PHASES}

    def __bool__(self) -> bool:
        return bool(self.pre_apply or self.post_apply)


def cf_manifest_files(files: Mapping[str, Any]) -> list[str]:
    """The templates of `cluster/cf-manifests/`, in file order (CLM reads the folder sorted; no sub-folders)."""
    return sorted(
        path
        for path in files
        if path.startswith(CF_MANIFESTS)
        and "/" not in path[len(CF_MANIFESTS) :]
        and path.endswith(SUFFIXES)
        and path != CF_DELETIONS
    )


def has_content(text: str) -> bool:
    """Whether a rendered file holds more than comments and blank lines (CLM skips it otherwise)."""
    return bool(_CONTENT.search(text))


def stack_name(template: Mapping[str, Any]) -> str:
    """The `Metadata.StackName` of an extra stack's template the renderer checked."""
    return str(template["Metadata"]["StackName"])


def checked_stack_name(file: str, body: str, template: Mapping[str, Any], cluster_id: str) -> str:
    """The template's `Metadata.StackName`, checked to be a stack name; RenderError naming file and line."""
    metadata = template.get("Metadata")
    name = metadata.get("StackName") if isinstance(metadata, dict) else None
    line = _line_of(body, _STACK_NAME_LINE)
    if name is None:
        raise RenderError("a cf-manifests template needs Metadata.StackName (the stack's name)", file, line, cluster_id)
    if not isinstance(name, str) or not STACK_NAME.fullmatch(name):
        reason = "is not a stack name (a letter, then letters, digits and -, at most 128)"
        raise RenderError(f"Metadata.StackName {name!r} {reason}", file, line, cluster_id)
    return name


def check_names(
    named: list[tuple[str, str, int | None]], deletions: list[tuple[str, str, int | None]], reserved: Mapping[str, str]
) -> None:
    """Refuse, naming file and line, a stack name of `reserved` (name -> what it is), one given twice, and one both
    applied and deleted. `named`, `deletions`: (stack name, file, line); the error's cluster is added by the caller."""
    applied: dict[str, tuple[str, int | None]] = {}
    for name, file, line in named:
        _refuse_reserved(name, file, line, reserved)
        if name in applied:
            first, first_line = applied[name]
            raise RenderError(f"stack {name!r} is also the StackName of {first}:{first_line}", file, line)
        applied[name] = (file, line)
    for name, file, line in deletions:
        _refuse_reserved(name, file, line, reserved)
        if name in applied:
            where, where_line = applied[name]
            raise RenderError(f"stack {name!r} is deleted here and applied by {where}:{where_line}", file, line)


def _refuse_reserved(name: str, file: str, line: int | None, reserved: Mapping[str, str]) -> None:
    what = reserved.get(name) or ("a node-pool stack's name" if name.startswith(NODE_POOL_STACK_PREFIX) else None)
    if what:
        raise RenderError(f"stack {name!r} is {what}: cf-manifests and cf-deletions.yaml may not name it", file, line)


def reserved_names(local_id: str, items: Mapping[str, str]) -> dict[str, str]:
    """The stack names no cf-manifest nor cf-deletion may use: the cluster stack's, CLM's etcd stack's (and the
    config item `etcd_stack_name`'s, CLM's override)."""
    names = {ETCD_STACK_NAME: "CLM's etcd stack"}
    if items.get("etcd_stack_name"):
        names[items["etcd_stack_name"]] = "CLM's etcd stack (config item etcd_stack_name)"
    return {**names, local_id: "the cluster stack"}


def parse_cf_deletions(text: str, file: str, cluster_id: str | None = None) -> tuple[CFDeletions, dict[str, int]]:
    """Parse rendered cf-deletions.yaml: the deletions and the line of each name; every problem names file and line."""
    phases: dict[str, list[str]] = {}
    lines: dict[str, int] = {}
    for phase, entries in phase_entries(text, file, cluster_id).items():
        for index, entry in enumerate(entries):
            problem = _entry_problem(entry)
            if problem:
                raise RenderError(f"{phase}[{index}]: {problem}", file, entries.item_lines[index], cluster_id)
            lines.setdefault(entry["stackName"], entries.item_lines[index])
        phases[phase] = [entry["stackName"] for entry in entries]
    return CFDeletions(**phases), lines


def _entry_problem(entry: Any) -> str:
    if not isinstance(entry, dict):
        return "must be a mapping with stackName"
    unknown = sorted(set(map(str, entry)) - {"stackName"})
    if unknown:
        return f"unknown field {unknown[0]!r} (expected stackName)"
    name = entry.get("stackName")
    if not isinstance(name, str) or not STACK_NAME.fullmatch(name):
        return f"stackName {name!r} is not a stack name (a letter, then letters, digits and -, at most 128)"
    return ""


def _line_of(body: str, pattern: re.Pattern[str]) -> int | None:
    found = pattern.search(body)
    return body.count("\n", 0, found.start()) + 1 if found else None


@dataclass(frozen=True)
class Source:
    """One configuration source as the renderer offers it: its files, `render(path)` a file rendered with the
    cluster's context, `load(path, body)` a rendered stack template parsed (RenderError naming file and line)."""

    prefix: str
    files: Mapping[str, Any]
    render: Callable[[str], str]
    load: Callable[[str, str], RenderedStack]


def render_cf_manifests(
    sources: list[Source], local_id: str, items: Mapping[str, str], cluster_id: str
) -> tuple[list[RenderedStack], CFDeletions]:
    """The extra stacks (with content, in source and file order) and the deletions of every source, checked as the
    module says; raises RenderError naming the cluster, file and line."""
    stacks: list[RenderedStack] = []
    named: list[tuple[str, str, int | None]] = []
    deletions, located = CFDeletions(), []
    for source in sources:
        for path in cf_manifest_files(source.files):
            body = source.render(path)
            if not has_content(body):
                continue
            stack = source.load(path, body)
            name = checked_stack_name(stack.file, body, stack.template, cluster_id)
            stacks.append(stack)
            named.append((name, stack.file, _line_of(body, _STACK_NAME_LINE)))
        if CF_DELETIONS in source.files:
            file = source.prefix + CF_DELETIONS
            found, lines = parse_cf_deletions(source.render(CF_DELETIONS), file, cluster_id)
            deletions = CFDeletions(deletions.pre_apply + found.pre_apply, deletions.post_apply + found.post_apply)
            located += [(name, file, lines[name]) for name in found.pre_apply + found.post_apply]
    try:
        check_names(named, located, reserved_names(local_id, items))
    except RenderError as exc:
        raise RenderError(exc.message, exc.file, exc.line, cluster_id) from None
    return stacks, deletions
