"""Kubernetes object names and namespaces as they go into API paths: one path segment each.

Kubernetes' own rule for every name (apimachinery path.IsValidPathSegmentName): not `.` or `..`, no `/` or `%`.
A name breaking it is refused before it reaches a path, where `..` would name another object (the client resolves
dot segments) and `/` another resource; what else a segment may hold (`#`, `?`) is percent-encoded.
"""

from __future__ import annotations

from urllib.parse import quote

NOT_IN_NAMES = ("/", "%")


def path_segment_problem(name: str) -> str | None:
    """Why `name` cannot be an object's name or namespace in an API path (Kubernetes' rule), or None."""
    if name in (".", ".."):
        return f"{name!r} may not be a name"
    for character in NOT_IN_NAMES:
        if character in name:
            return f"{name!r} may not contain {character!r}"
    return None


def path_segment(name: str) -> str:
    """`name` as one percent-encoded API path segment; ValueError when Kubernetes' rule refuses it."""
    problem = path_segment_problem(name)
    if problem:
        raise ValueError(f"object name or namespace {problem}")
    return quote(name, safe=":@")
