"""IAM policy evaluation for one request, as AWS evaluates identity-based policies within one account.

An explicit Deny in any policy wins; otherwise an identity policy must Allow and, when the principal has a
permissions boundary, the boundary must Allow too. Actions match case-insensitively, resources case-sensitively,
both with ``*`` and ``?``. Conditions support AWS's string, ARN, Bool, Null and numeric operators with the
``IfExists`` suffix and the ``ForAnyValue:``/``ForAllValues:`` set prefixes. A statement this module cannot judge
(an unknown operator, a policy variable, a condition key the request's builder does not know, global keys included:
they are known once the principal's values are added, :meth:`Request.with_keys`) raises :class:`CannotJudge`: the
sandbox reports it instead of guessing.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any


class CannotJudge(Exception):
    """The policy needs something the sandbox does not evaluate; the call is refused and reported."""


@dataclass(frozen=True)
class Request:
    """One authorization question: may the principal perform ``action`` on ``resource`` in this context?

    ``context`` maps lower-case condition keys to their values; ``known`` lists the keys (or key prefixes ending
    in ``/`` or ``:``, e.g. ``kms:encryptioncontext:``) that the builder computed, so that a key absent from
    ``context`` but known is truly absent.
    """

    action: str
    resource: str
    context: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    known: frozenset[str] = frozenset()

    def knows(self, key: str) -> bool:
        """Whether the request's context is complete for ``key`` (lower case)."""
        if key in self.known:
            return True
        return any(prefix.endswith(("/", ":")) and key.startswith(prefix) for prefix in self.known)

    def values(self, key: str) -> list[str] | None:
        """The key's values, or None if the request has no such key."""
        value = self.context.get(key)
        if value is None:
            return None
        return [value] if isinstance(value, str) else list(value)

    def with_keys(self, values: Mapping[str, str]) -> Request:
        """This request with more condition keys (lower case), known from now on (a principal's global keys)."""
        return replace(self, context={**values, **self.context}, known=self.known | frozenset(values))


@dataclass(frozen=True)
class Policy:
    """A named policy document (``{"Statement": [...]}``) as IAM stores it."""

    name: str
    document: Mapping[str, Any]

    def statements(self) -> list[Mapping[str, Any]]:
        """The policy's statements (a single statement object counts as a list of one)."""
        statements = self.document.get("Statement", [])
        return [statements] if isinstance(statements, Mapping) else list(statements)


@dataclass(frozen=True)
class Decision:
    """The outcome: allowed or not, and why (the policy that decided, or what was missing)."""

    allowed: bool
    reason: str


def evaluate(
    request: Request, identity: Sequence[Policy], boundary: Policy | None = None, granted_by: str | None = None
) -> Decision:
    """Decide ``request`` against the principal's identity policies and optional permissions boundary; ``granted_by``
    names a resource-based policy of the same account that allows the principal's own ARN (no identity grant needed)."""
    allowing: str | None = None
    for policy in identity:
        effect = policy_effect(policy, request)
        if effect == "Deny":
            return Decision(False, f"an explicit deny in the identity-based policy {policy.name}")
        if effect == "Allow" and allowing is None:
            allowing = policy.name
    allowing = allowing or granted_by
    if allowing is None:
        return Decision(False, f"no identity-based policy allows the {request.action} action")
    if boundary is not None:
        effect = policy_effect(boundary, request)
        if effect == "Deny":
            return Decision(False, f"an explicit deny in the permissions boundary {boundary.name}")
        if effect != "Allow":
            return Decision(False, f"no permissions boundary allows the {request.action} action")
    return Decision(True, f"allowed by {allowing}")


def policy_effect(policy: Policy, request: Request) -> str | None:
    """'Deny' if a statement that applies to ``request`` denies, else 'Allow' if one allows, else None."""
    effect = None
    for statement in policy.statements():
        if applies(statement, request):
            if statement.get("Effect") == "Deny":
                return "Deny"
            effect = "Allow"
    return effect


def applies(statement: Mapping[str, Any], request: Request) -> bool:
    """Whether the statement's action, resource and conditions cover ``request`` (its Effect and Principal aside)."""
    if "Action" in statement:
        if not _any_match(statement["Action"], request.action, case_sensitive=False):
            return False
    elif _any_match(statement.get("NotAction", []), request.action, case_sensitive=False):
        return False
    if "Resource" in statement:
        if not _any_match(statement["Resource"], request.resource, case_sensitive=True):
            return False
    elif "NotResource" in statement and _any_match(statement["NotResource"], request.resource, case_sensitive=True):
        return False
    return all(
        _condition_holds(operator, key, expected, request)
        for operator, block in (statement.get("Condition") or {}).items()
        for key, expected in block.items()
    )


def _any_match(patterns: str | Sequence[str], value: str, case_sensitive: bool) -> bool:
    return any(
        wildcard_match(p, value, case_sensitive) for p in ([patterns] if isinstance(patterns, str) else patterns)
    )


def wildcard_match(pattern: str, value: str, case_sensitive: bool = True) -> bool:
    """IAM's wildcard match: ``*`` any run of characters, ``?`` one character (``*`` alone matches anything)."""
    if "${" in pattern:
        raise CannotJudge(f"policy variable in {pattern!r}")
    if pattern == "*":
        return True
    return _wildcard_regex(pattern, case_sensitive).fullmatch(value) is not None


@functools.lru_cache(maxsize=4096)
def _wildcard_regex(pattern: str, case_sensitive: bool) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern.replace("[", "[[]")), 0 if case_sensitive else re.IGNORECASE)


def _condition_holds(operator: str, key: str, expected: Any, request: Request) -> bool:
    key = key.lower()
    if not request.knows(key):
        raise CannotJudge(f"condition key {key} (the sandbox does not compute it for {request.action})")
    expected_values = [str(v).lower() if isinstance(v, bool) else str(v) for v in _as_list(expected)]
    actual = request.values(key)
    set_operator, _, operator = operator.rpartition(":")
    if_exists = operator.endswith("IfExists")
    operator = operator.removesuffix("IfExists")
    if operator == "Null":
        return (actual is None) == (expected_values[0].lower() == "true")
    compare = _OPERATORS.get(operator)
    if compare is None:
        raise CannotJudge(f"condition operator {operator}")
    negated = "Not" in operator
    if actual is None:
        return if_exists or negated or set_operator == "ForAllValues"
    matches = [any(compare(value, e) for e in expected_values) for value in actual]
    if negated:
        matches = [not any(compare(value, e) for e in expected_values) for value in actual]
    if set_operator == "ForAllValues":
        return all(matches)
    return any(matches)


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _number(text: str) -> float:
    return float(text)


_OPERATORS = {
    "StringEquals": lambda a, e: a == e,
    "StringNotEquals": lambda a, e: a == e,
    "StringEqualsIgnoreCase": lambda a, e: a.lower() == e.lower(),
    "StringNotEqualsIgnoreCase": lambda a, e: a.lower() == e.lower(),
    "StringLike": lambda a, e: wildcard_match(e, a),
    "StringNotLike": lambda a, e: wildcard_match(e, a),
    "ArnEquals": lambda a, e: wildcard_match(e, a),
    "ArnNotEquals": lambda a, e: wildcard_match(e, a),
    "ArnLike": lambda a, e: wildcard_match(e, a),
    "ArnNotLike": lambda a, e: wildcard_match(e, a),
    "Bool": lambda a, e: a.lower() == e.lower(),
    "NumericEquals": lambda a, e: _number(a) == _number(e),
    "NumericNotEquals": lambda a, e: _number(a) == _number(e),
    "NumericLessThan": lambda a, e: _number(a) < _number(e),
    "NumericLessThanEquals": lambda a, e: _number(a) <= _number(e),
    "NumericGreaterThan": lambda a, e: _number(a) > _number(e),
    "NumericGreaterThanEquals": lambda a, e: _number(a) >= _number(e),
}
