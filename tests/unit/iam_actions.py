"""IAM action matching for the policy tests (no tests here): actions are case-insensitive, `*` and `?` wildcards."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any


def covers(pattern: str, action: str) -> bool:
    """Whether a policy's action `pattern` covers `action` (a wildcard in `action` must be covered as a whole)."""
    return fnmatchcase(action.lower(), pattern.lower())


def allowing(statements: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    """The Allow statements among `statements` that cover `action`."""
    return [
        statement
        for statement in statements
        if statement["Effect"] == "Allow"
        and any(covers(pattern, action) for pattern in as_list(statement.get("Action", [])))
    ]


def as_list(value: Any) -> list[Any]:
    """A policy field that may be one value or a list, as a list."""
    return value if isinstance(value, list) else [value]
