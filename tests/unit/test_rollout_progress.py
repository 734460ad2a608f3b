"""clm.rollout.progress: a rollout moves wave by wave, each at its concurrency, passing a wave only when all its
clusters are at the version and its bake has passed; halted, aborted or paused, it starts nothing; the whole
decision follows from the registry status and the kept state (a second look changes nothing)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clm.model import Cluster, ClusterStatus
from clm.rollout.parse import parse
from clm.rollout.progress import (
    BAKING,
    DONE,
    PASSED,
    PENDING,
    ROLLING_WAVE,
    STARTED,
    WAITING,
    advance,
    cluster_state,
)
from clm.rollout.state import ABORTED, COMPLETED, HALTED, ROLLING, Halt, RolloutState, WaveTimes

OLD, NEW = "config-old", "config-new"
T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
POLICY = parse(
    """
max_concurrency: 3
waves:
  - {name: canary, size: 1, bake: 30m}
  - {name: test, select: {environment: test}, concurrency: 2, bake: 1h}
  - {name: production, concurrency: 2}
""",
    "rollout.yaml",
)


def cluster(name: str, environment: str, criticality: int, at: str = OLD, next_at: str = "") -> Cluster:
    status = ClusterStatus(current_version=f"{at}#h", next_version=f"{next_at}#h" if next_at else "")
    return Cluster(
        f"aws:123456789012:eu-central-1:{name}", name, "aws:123456789012", "eu-central-1", "zalando-aws",
        environment=environment, criticality_level=criticality, status=status,
    )  # fmt: skip


def fleet(**states: tuple[str, str]) -> list[Cluster]:
    """Six clusters: t0..t2 test (criticality 0, 1, 2), p0..p2 production (3, 4, 5); `states` moves some."""
    made = [cluster(f"t{i}", "test", i) for i in range(3)] + [cluster(f"p{i}", "production", i + 3) for i in range(3)]
    return [cluster(c.local_id, c.environment, c.criticality_level, *states[c.local_id]) if c.local_id in states
            else c for c in made]  # fmt: skip


def ids(*names: str) -> tuple[str, ...]:
    return tuple(f"aws:123456789012:eu-central-1:{name}" for name in names)


def waves(progress) -> list[tuple[str, str]]:
    return [(wave.name, wave.state) for wave in progress.waves]


def test_a_new_rollout_starts_the_canary_alone() -> None:
    progress = advance(POLICY, fleet(), RolloutState(NEW, T0), T0)
    assert progress.start == ids("t0")
    assert waves(progress) == [("canary", ROLLING_WAVE), ("test", PENDING), ("production", PENDING)]
    assert progress.state.waves["canary"] == WaveTimes(started_at=T0)
    assert progress.wake_at is None


def test_a_started_canary_starts_nothing_more() -> None:
    state = RolloutState(NEW, T0, waves={"canary": WaveTimes(T0)})
    progress = advance(POLICY, fleet(t0=(OLD, NEW)), state, T0 + timedelta(minutes=5))
    assert progress.start == ()
    assert progress.state == state
    assert progress.waiting_for == "wave canary: its runs"


def test_a_done_canary_bakes_then_the_next_wave_starts_at_its_concurrency() -> None:
    state = RolloutState(NEW, T0, waves={"canary": WaveTimes(T0)})
    done_at = T0 + timedelta(minutes=10)
    baking = advance(POLICY, fleet(t0=(NEW, "")), state, done_at)
    assert baking.start == ()
    assert waves(baking)[0] == ("canary", BAKING)
    assert baking.wake_at == done_at + timedelta(minutes=30)
    assert baking.waiting_for == "wave canary bakes until 2026-11-27T12:40:00Z"
    still = advance(POLICY, fleet(t0=(NEW, "")), baking.state, done_at + timedelta(minutes=29, seconds=59))
    assert still.start == ()
    baked = advance(POLICY, fleet(t0=(NEW, "")), baking.state, done_at + timedelta(minutes=30))
    assert waves(baked)[:2] == [("canary", PASSED), ("test", ROLLING_WAVE)]
    assert baked.start == ids("t1", "t2")


def test_the_last_wave_takes_its_concurrency_less_those_started() -> None:
    state = RolloutState(NEW, T0, waves={"canary": WaveTimes(T0, T0), "test": WaveTimes(T0, T0)})
    later = T0 + timedelta(hours=2)
    progress = advance(POLICY, fleet(t0=(NEW, ""), t1=(NEW, ""), t2=(NEW, ""), p0=(OLD, NEW)), state, later)
    assert progress.start == ids("p1")
    assert progress.waiting_for == "wave production: 2 of its clusters running, 1 waiting"


def test_every_cluster_done_completes_the_rollout_once() -> None:
    everyone = {name: (NEW, "") for name in ("t0", "t1", "t2", "p0", "p1", "p2")}
    state = RolloutState(NEW, T0, waves={"canary": WaveTimes(T0, T0), "test": WaveTimes(T0, T0)})
    later = T0 + timedelta(hours=3)
    progress = advance(POLICY, fleet(**everyone), state, later)
    assert (progress.state.state, progress.state.completed_at) == (COMPLETED, later)
    again = advance(POLICY, fleet(**everyone), progress.state, later + timedelta(hours=1))
    assert again.state == progress.state


@pytest.mark.parametrize("how", [HALTED, ABORTED, "paused"])
def test_halted_aborted_or_paused_starts_nothing(how: str) -> None:
    halt = Halt("aws:123456789012:eu-central-1:t0", "arn:execution", "step Apply: bad manifest", T0)
    state = RolloutState(NEW, T0, waves={"canary": WaveTimes(T0, T0)}, state=ROLLING if how == "paused" else how,
                         halt=halt if how == HALTED else None)  # fmt: skip
    progress = advance(POLICY, fleet(t0=(NEW, "")), state, T0 + timedelta(hours=1), paused=how == "paused")
    assert progress.start == ()
    expected = {
        HALTED: "rollout halted: aws:123456789012:eu-central-1:t0: step Apply: bad manifest",
        ABORTED: "rollout aborted",
        "paused": "rollout paused (clm rollout resume)",
    }
    assert progress.waiting_for == expected[how]
    assert progress.state.state == state.state
    baking = advance(POLICY, fleet(t0=(NEW, "")), state, T0 + timedelta(minutes=1), paused=how == "paused")
    assert baking.waves[0].state == "baking" and baking.waiting_for == expected[how]  # not the bake: it waits for that


def test_an_empty_wave_passes_at_once_without_its_bake() -> None:
    policy = parse("waves:\n- {name: staging, select: {environment: staging}, bake: 1h}\n- {name: rest}\n", "p.yaml")
    progress = advance(policy, fleet(), RolloutState(NEW, T0), T0)
    assert waves(progress) == [("staging", PASSED), ("rest", ROLLING_WAVE)]
    assert progress.start == ids("t0")


def test_cluster_state_reads_current_and_next_versions() -> None:
    assert cluster_state(cluster("a", "test", 0, NEW), NEW) == DONE
    assert cluster_state(cluster("a", "test", 0, OLD, NEW), NEW) == STARTED
    assert cluster_state(cluster("a", "test", 0, OLD), NEW) == WAITING
    assert cluster_state(cluster("a", "test", 0, OLD, "config-other"), NEW) == WAITING


@given(
    st.lists(st.sampled_from([(OLD, ""), (OLD, NEW), (NEW, "")]), min_size=6, max_size=6),
    st.integers(min_value=0, max_value=4 * 3600),
)
def test_a_look_never_starts_more_than_the_wave_allows_and_a_second_look_agrees(states, seconds) -> None:
    clusters = fleet(**dict(zip(("t0", "t1", "t2", "p0", "p1", "p2"), states, strict=True)))
    now = T0 + timedelta(seconds=seconds)
    first = advance(POLICY, clusters, RolloutState(NEW, T0), now)
    current = [wave for wave in first.waves if wave.state in (ROLLING_WAVE, BAKING)]
    assert len(current) <= 1
    if first.start:
        [wave] = current
        started = sum(1 for _, state in wave.clusters if state == STARTED)
        assert started + len(first.start) <= wave.concurrency
        assert set(first.start) <= {cluster_id for cluster_id, state in wave.clusters if state == WAITING}
    second = advance(POLICY, clusters, first.state, now)
    assert (second.state, second.start) == (first.state, first.start)
    assert replace(second, waves=()) == replace(first, waves=())


def test_a_wave_with_nothing_left_after_it_passes_without_its_bake() -> None:
    """A one-cluster fleet (or one whose later waves are done or empty) completes when its last runs succeed: a bake
    holds back only clusters still to take the version."""
    alone = advance(POLICY, [cluster("t0", "test", 0, NEW)], RolloutState(NEW, T0, waves={"canary": WaveTimes(T0)}), T0)
    assert waves(alone) == [("canary", PASSED), ("test", PASSED), ("production", PASSED)]
    assert alone.state.state == COMPLETED and alone.wake_at is None
    later_done = {name: (NEW, "") for name in ("t0", "t1", "t2", "p0", "p1", "p2")}
    progress = advance(POLICY, fleet(**later_done), RolloutState(NEW, T0), T0)  # e.g. each took it as its own change
    assert progress.state.state == COMPLETED and progress.wake_at is None
