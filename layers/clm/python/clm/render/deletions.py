"""deletions.yaml: what to delete before and after applying manifests, validated up front."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from clm.errors import RenderError
from clm.object_names import path_segment_problem
from clm.yamlutil import error_line, error_reason, load_with_lines, plain

PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")
PHASES = ("pre_apply", "post_apply")
ENTRY_FIELDS = {
    "kind",
    "namespace",
    "name",
    "selector",
    "labels",
    "has_owner",
    "propagation_policy",
    "grace_period_seconds",
}


@dataclass(frozen=True)
class Deletion:
    """One declarative deletion; `namespace` "" means none given (cluster-scoped kinds; every namespace by labels)."""

    kind: str
    namespace: str = ""
    name: str | None = None
    selector: str | None = None
    labels: dict[str, str] | None = None
    has_owner: bool | None = None
    propagation_policy: str | None = None
    grace_period_seconds: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict without unset options."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class Deletions:
    """The deletions of a cluster, in the two phases around applying manifests."""

    pre_apply: list[Deletion] = field(default_factory=list)
    post_apply: list[Deletion] = field(default_factory=list)

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """Plain dict in deletions.yaml's format."""
        return {
            "pre_apply": [d.to_dict() for d in self.pre_apply],
            "post_apply": [d.to_dict() for d in self.post_apply],
        }


def _entry_problems(entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return ["must be a mapping"]
    problems = [f"unknown field {key!r}" for key in sorted(set(map(str, entry)) - ENTRY_FIELDS)]
    if not isinstance(entry.get("kind"), str) or not entry.get("kind"):
        problems.append("kind is required")
    problems += [
        f"{key} must be a string"
        for key in ("namespace", "name", "selector")
        if entry.get(key) is not None and not isinstance(entry[key], str)
    ]
    problems += [
        f"{key} {problem}"
        for key in ("namespace", "name")
        if isinstance(entry.get(key), str) and entry[key] and (problem := path_segment_problem(entry[key]))
    ]
    targets = [key for key in ("name", "selector", "labels") if entry.get(key) not in (None, "", {})]
    if len(targets) != 1:
        problems.append(f"give exactly one of name, selector, labels (got {', '.join(targets) or 'none'})")
    if "has_owner" in entry and "name" in targets:
        problems.append("has_owner goes with selector or labels, not name")
    if "has_owner" in entry and not isinstance(entry["has_owner"], bool):
        problems.append("has_owner must be true or false")
    if "labels" in entry and not (
        isinstance(entry["labels"], dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in entry["labels"].items())
    ):
        problems.append("labels must be a mapping of strings")
    policy = entry.get("propagation_policy")
    if policy is not None and policy not in PROPAGATION_POLICIES:
        problems.append(f"propagation_policy {policy!r} is not one of {', '.join(PROPAGATION_POLICIES)}")
    grace = entry.get("grace_period_seconds")
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int) or grace < 0):
        problems.append("grace_period_seconds must be an integer >= 0")
    return problems


def parse_deletions(text: str, file: str, cluster_id: str | None = None) -> Deletions:
    """Parse rendered deletions.yaml; every problem names the file, line and entry."""
    phases: dict[str, list[Deletion]] = {}
    for phase, entries in phase_entries(text, file, cluster_id).items():
        for index, entry in enumerate(entries):
            problems = _entry_problems(entry)
            if problems:
                raise RenderError(
                    f"{phase}[{index}]: {'; '.join(problems)}", file, entries.item_lines[index], cluster_id
                )
        phases[phase] = [Deletion(**plain({**e, "namespace": str(e.get("namespace") or "")})) for e in entries]
    return Deletions(**phases)


def phase_entries(text: str, file: str, cluster_id: str | None = None) -> dict[str, Any]:
    """The `pre_apply` and `post_apply` lists of a rendered deletions file (deletions.yaml, cf-deletions.yaml), each
    with its items' lines (`item_lines`); RenderError naming file and line for anything else at the top."""
    try:
        data = load_with_lines(text)
    except yaml.YAMLError as exc:
        raise RenderError(f"not valid YAML: {error_reason(exc)}", file, error_line(exc), cluster_id) from None
    if data is None:
        return {phase: [] for phase in PHASES}
    if not isinstance(data, dict):
        raise RenderError("expected a mapping with pre_apply and post_apply", file, 1, cluster_id)
    unknown = sorted(set(map(str, data)) - set(PHASES))
    if unknown:
        raise RenderError(
            f"unknown key {unknown[0]!r} (expected pre_apply, post_apply)", file, data.line_of(unknown[0]), cluster_id
        )
    found = {phase: data.get(phase) or [] for phase in PHASES}
    for phase, entries in found.items():
        if not isinstance(entries, list):
            raise RenderError(f"{phase} must be a list", file, data.line_of(phase), cluster_id)
    return found
