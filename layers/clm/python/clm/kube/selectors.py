"""Label selectors: matching a LabelSelector object against labels, and the query-string form."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression.get("key", ""), expression.get("operator", "")
    values = expression.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False  # an unknown operator matches nothing, as the API server's validation would refuse it


def selector_matches(
    selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None, *, empty_matches_all: bool
) -> bool:
    """Whether a LabelSelector (matchLabels and matchExpressions) selects `labels`.

    A null selector matches nothing. An empty one matches everything when `empty_matches_all`
    (policy/v1 PDBs) and nothing otherwise (policy/v1beta1 PDBs).
    """
    if selector is None:
        return False
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not match_labels and not expressions:
        return empty_matches_all
    labels = labels or {}
    return all(labels.get(k) == v for k, v in match_labels.items()) and all(
        _expression_matches(e, labels) for e in expressions
    )


def selector_string(labels: Mapping[str, str]) -> str:
    """`k1=v1,k2=v2`: the labelSelector query for equality on every label."""
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
