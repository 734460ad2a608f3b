"""A cluster's problem list, kept as Zalando CLM keeps it: repeats coalesced, at most 25 entries."""

from __future__ import annotations

from clm.model import PROBLEM_TYPES, Problem

PROBLEM_LIMIT = 25
TOO_MANY_PROBLEMS = Problem(type=PROBLEM_TYPES + "too-many-problems", title="<multiple problems>")


def configuration_problem(error: str) -> str:
    """The title of the problem recorded on a cluster whose configuration cannot be read (`error` says why)."""
    return f"configuration: {error}"


def coalesce(problems: list[Problem]) -> list[Problem]:
    """Collapse every run of equal adjacent problems into one."""
    result: list[Problem] = []
    for problem in problems:
        if not result or result[-1] != problem:
            result.append(problem)
    return result


def add_problem(problems: list[Problem], problem: Problem) -> list[Problem]:
    """Append `problem` and coalesce repeats; past 25, keep the newest 25, the first saying there were more.

    Like CLM (append, compact, keep the last 25 with the first replaced by "<multiple problems>"),
    plus one more compaction so that the marker never stands next to an equal entry.
    """
    result = coalesce([*problems, problem])
    if len(result) > PROBLEM_LIMIT:
        result = coalesce([TOO_MANY_PROBLEMS, *result[-(PROBLEM_LIMIT - 1) :]])
    return result
