"""clm.rollout.events: a rollout's events follow from the state kept before a look and the state after it, each made
once (a second look with nothing new makes none), and reconcile's gate publishes them before it writes."""

from __future__ import annotations

from datetime import timedelta

from clm.rollout.events import ROLLOUT_COMPLETED, STARTED, WAVE_COMPLETED, WAVE_STARTED, transitions
from clm.rollout.progress import advance
from clm.rollout.state import RolloutState, WaveTimes
from tests.unit.test_rollout_progress import NEW, POLICY, T0, fleet, ids


def kinds(events) -> list[tuple[str, str]]:
    return [(event.detail_type, event.detail.get("wave", "")) for event in events]


def test_a_new_rollout_starts_with_its_canary_and_says_which_clusters() -> None:
    progress = advance(POLICY, fleet(), RolloutState(NEW, T0), T0)
    events = transitions(None, progress.state, progress.waves)
    assert kinds(events) == [(STARTED, ""), (WAVE_STARTED, "canary")]
    assert events[1].detail == {
        "version": NEW, "wave": "canary", "clusters": list(ids("t0")), "at": "2026-11-27T12:00:00Z", "concurrency": 1,
    }  # fmt: skip
    assert transitions(progress.state, progress.state, progress.waves) == []


def test_a_wave_done_then_the_last_the_rollout_completed() -> None:
    before = RolloutState(NEW, T0, waves={"canary": WaveTimes(T0)})
    done = advance(POLICY, fleet(t0=(NEW, "")), before, T0 + timedelta(minutes=10))
    [completed] = transitions(before, done.state, done.waves)
    assert kinds([completed]) == [(WAVE_COMPLETED, "canary")]
    assert completed.detail["bake_until"] == "2026-11-27T12:40:00Z"
    everyone = {name: (NEW, "") for name in ("t0", "t1", "t2", "p0", "p1", "p2")}
    kept = RolloutState(
        NEW, T0, waves={"canary": WaveTimes(T0, T0), "test": WaveTimes(T0, T0), "production": WaveTimes(T0)}
    )
    end = advance(POLICY, fleet(**everyone), kept, T0 + timedelta(hours=3))
    assert kinds(transitions(kept, end.state, end.waves)) == [(WAVE_COMPLETED, "production"), (ROLLOUT_COMPLETED, "")]
