"""Split rendered manifests into Kubernetes objects and check each one's identity fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from clm.errors import RenderError
from clm.object_names import path_segment_problem
from clm.render.json_values import json_problem
from clm.yamlutil import error_line, error_reason, load_all_with_lines, plain


@dataclass(frozen=True)
class Manifest:
    """One Kubernetes object rendered from `file` (document `index`, 1-based, starting at `line`); `sealed`: the
    pointers of its nodes that hold decrypted config items (clm.sealed), scrubbed from errors about it."""

    file: str
    index: int
    line: int
    body: dict[str, Any]
    sealed: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        """The object's kind."""
        return self.body["kind"]

    @property
    def name(self) -> str:
        """The object's metadata.name."""
        return self.body["metadata"]["name"]

    @property
    def namespace(self) -> str:
        """metadata.namespace, or "" when not set."""
        return self.body["metadata"].get("namespace", "")


def _document_problem(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return f"must be a mapping (a Kubernetes object), got {type(doc).__name__}"
    for key in ("apiVersion", "kind"):
        if not isinstance(doc.get(key), str) or not doc.get(key):
            return f"{key} is missing"
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str) or not metadata["name"]:
        return f"{doc['kind']}: metadata.name is missing"
    return None


def _name_problem(doc: dict[str, Any]) -> tuple[str, int | None] | None:
    """Why the object's metadata.name or metadata.namespace cannot be a segment of its API path, with its line."""
    metadata = doc["metadata"]
    for field in ("name", "namespace"):
        value = metadata.get(field)
        problem = path_segment_problem(value) if isinstance(value, str) else None
        if problem:
            return f"{doc['kind']}: metadata.{field} {problem}", getattr(metadata, "line_of", lambda _: None)(field)
    return None


def split_manifests(
    text: str, file: str, cluster_id: str | None = None, warnings: list[str] | None = None
) -> list[Manifest]:
    """Parse a multi-document YAML file; empty documents are dropped, others must be objects.

    A key twice in one mapping is refused, unless `warnings` is given: then, as kubectl and CLM decode manifests
    (yaml.v2, non-strict), the last value is used and a warning naming file, line and key is appended to it."""
    duplicates: list[tuple[int, str]] | None = None if warnings is None else []
    try:
        documents = load_all_with_lines(text, duplicates)
    except yaml.YAMLError as exc:
        raise RenderError(f"rendered YAML is invalid: {error_reason(exc)}", file, error_line(exc), cluster_id) from None
    for line, key in duplicates or []:
        warnings.append(f"{file}:{line}: duplicate key {key!r}: the last value is used, as kubectl does")
    result = []
    for index, doc in enumerate(documents, start=1):
        if doc is None:
            continue
        line = getattr(doc, "line", None)
        problem = _document_problem(doc)
        if problem:
            raise RenderError(f"document {index}: {problem}", file, line, cluster_id)
        bad_name = _name_problem(doc)
        if bad_name:
            raise RenderError(f"document {index}: {bad_name[0]}", file, bad_name[1] or line, cluster_id)
        not_json = json_problem(doc)
        if not_json:
            raise RenderError(f"document {index}: {not_json[0]}", file, not_json[1] or line, cluster_id)
        result.append(Manifest(file=file, index=index, line=line or 1, body=plain(doc)))
    return result
