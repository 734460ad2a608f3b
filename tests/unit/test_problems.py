"""The problem list kept as CLM keeps it: coalesced repeats, at most 25 entries."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from clm.model import Problem
from clm.registry.problems import PROBLEM_LIMIT, TOO_MANY_PROBLEMS, add_problem, coalesce

# Few distinct problems, so that repeats (adjacent and not) are common; the marker itself too.
problems = st.one_of(
    st.builds(Problem, title=st.sampled_from(["a", "b", "c"]), detail=st.sampled_from(["", "x"])),
    st.just(TOO_MANY_PROBLEMS),
)
problem_lists = st.lists(problems, max_size=40)


def p(title: str) -> Problem:
    return Problem(title=title)


@given(problem_lists, problems)
def test_at_most_the_limit(existing: list[Problem], new: Problem):
    assert len(add_problem(existing, new)) <= PROBLEM_LIMIT


@given(problem_lists, problems)
def test_no_adjacent_repeats(existing: list[Problem], new: Problem):
    result = add_problem(existing, new)
    assert all(a != b for a, b in pairwise(result))


@given(problem_lists, problems)
def test_newest_is_last(existing: list[Problem], new: Problem):
    assert add_problem(existing, new)[-1] == new


@given(problem_lists, problems)
def test_marker_only_when_truncated(existing: list[Problem], new: Problem):
    appended = coalesce([*existing, new])
    result = add_problem(existing, new)
    if len(appended) <= PROBLEM_LIMIT:
        assert result == appended
    else:
        assert result[0] == TOO_MANY_PROBLEMS
        assert result[1:] == appended[len(appended) - len(result) + 1 :]


@given(problem_lists)
def test_coalesce_is_idempotent(existing: list[Problem]):
    once = coalesce(existing)
    assert coalesce(once) == once


def test_appends_to_empty():
    assert add_problem([], p("a")) == [p("a")]


def test_repeat_of_last_collapses():
    assert add_problem([p("a"), p("b")], p("b")) == [p("a"), p("b")]


def test_earlier_repeat_is_kept():
    assert add_problem([p("a"), p("b")], p("a")) == [p("a"), p("b"), p("a")]


def test_repeats_already_stored_collapse_too():
    assert add_problem([p("a"), p("a"), p("b")], p("c")) == [p("a"), p("b"), p("c")]


def test_problems_differing_in_any_field_are_distinct():
    existing = [Problem(title="a", detail="one")]
    assert add_problem(existing, Problem(title="a", detail="two")) == [
        Problem(title="a", detail="one"),
        Problem(title="a", detail="two"),
    ]


def test_exactly_the_limit_is_not_truncated():
    existing = [p(str(i)) for i in range(PROBLEM_LIMIT - 1)]
    assert add_problem(existing, p("new")) == [*existing, p("new")]


def test_past_the_limit_keeps_the_newest_behind_the_marker():
    existing = [p(str(i)) for i in range(PROBLEM_LIMIT)]
    result = add_problem(existing, p("new"))
    assert result == [TOO_MANY_PROBLEMS, *[p(str(i)) for i in range(2, PROBLEM_LIMIT)], p("new")]
    assert len(result) == PROBLEM_LIMIT


def test_marker_stays_first_as_problems_keep_coming():
    problems_: list[Problem] = []
    for i in range(100):
        problems_ = add_problem(problems_, p(str(i)))
    assert problems_ == [TOO_MANY_PROBLEMS, *[p(str(i)) for i in range(76, 100)]]


CLM_PROBLEMS = "https://cluster-lifecycle-manager.zalando.org/problems/"  # Zalando CLM's controller/controller.go


def test_marker_shape():
    assert Problem(type=CLM_PROBLEMS + "too-many-problems", title="<multiple problems>") == TOO_MANY_PROBLEMS


def clm_problem(title: str, type_: str = "general-error") -> Problem:
    """A problem as Zalando CLM's registry holds it (every field present)."""
    return Problem.from_dict({"detail": "", "instance": "", "status": 0, "title": title, "type": CLM_PROBLEMS + type_})


def test_imported_problems_coalesce_with_new_ones():
    imported = [clm_problem("a"), clm_problem("boom")]
    assert add_problem(imported, Problem(title="boom")) == imported
    full = [clm_problem("<multiple problems>", "too-many-problems"), *[clm_problem(str(i)) for i in range(24)]]
    assert full[0] == TOO_MANY_PROBLEMS
    result = add_problem(full, Problem(title="new"))
    assert result == [TOO_MANY_PROBLEMS, *full[2:], p("new")]
