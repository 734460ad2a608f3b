"""bench/target_sessions.py's counts, which docs/benchmarks.md quotes: a step in a target adds AssumeRole and
GetCallerIdentity (and the target session's clients) to its first step in a container, nothing to the next ones,
and a target's session is assumed again every 45 minutes of steps."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))

import target_sessions
import target_world

ASSUME = Counter({"sts:AssumeRole": 1, "sts:GetCallerIdentity": 1})


@pytest.fixture
def made() -> Iterator[target_world.World]:
    """The benchmark's hub and target, the sandbox's IAM judging; every kept client forgotten after."""
    with target_world.world() as made:
        yield made
        target_sessions.forget("cold")


def _extra(samples, step: str, state: str, counted: str) -> Counter[str]:
    """What the step asked more of AWS in the target than at home (`calls` or `clients`), the same in every run."""
    home, there = ([getattr(s.meter, counted) for s in samples[(step, h, state)]] for h in (True, False))
    assert all(c == home[0] for c in home) and all(c == there[0] for c in there)
    return there[0] - home[0]


def test_a_targets_first_step_assumes_and_verifies_once_and_a_warm_one_adds_nothing(made) -> None:
    samples = target_sessions.measure(made, repeat=2)
    own = {  # pools: the node-pool stacks, and the instances of Karpenter pools gone from the registry
        "check_stack": ["cloudformation:DescribeStacks"],
        "pools": ["dynamodb:GetItem", "cloudformation:ListStacks", "ec2:DescribeInstances"],
    }
    for step, calls in own.items():
        services = Counter(call.split(":")[0] for call in calls if not call.startswith("dynamodb:"))
        assert _extra(samples, step, "cold", "calls") == ASSUME
        assert _extra(samples, step, "cold", "clients") == Counter({"sts": 1})  # the target session's, to verify
        assert _extra(samples, step, "first", "calls") == ASSUME
        assert _extra(samples, step, "first", "clients") == Counter({"sts": 1}) + Counter(set(services))
        assert [s.meter.sessions for s in samples[(step, False, "first")]] == [1, 1]  # the target's boto3 session
        assert _extra(samples, step, "warm", "calls") == Counter()
        assert _extra(samples, step, "warm", "clients") == Counter()
        assert samples[(step, False, "warm")][0].meter.calls == Counter(calls)  # the registry's still the hub's
        assert target_sessions.counts(samples[(step, False, "warm")]) == (len(calls), 0, 0)


def test_a_target_is_assumed_again_every_45_minutes_of_steps(made) -> None:
    """A 60-minute session renewed 15 minutes before it expires: at the first step after 45 minutes."""
    found = target_sessions.renewals(made, hours=3, every=30)
    assert (found.assumes, found.verifies) == (4, 4)
    assert found.minutes == [0.0, 45.5, 91.0, 136.5]
