"""A rollout made by hand for the pictures' tests, as `clm rollout status -o json` shows it: three waves; the canary
passed, the second wave halted by a failed run (its problem holds markup) with one cluster baking and one still
running, the last wave waiting; rollouts paused. Built with the real records (RolloutState, Progress, Run)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from clm.cli.rollout_runs import Run, Runs, with_runs
from clm.rollout.progress import DONE, PASSED, PENDING, ROLLING_WAVE, STARTED, WAITING, Progress, WaveProgress
from clm.rollout.state import HALTED, Halt, RolloutState, WaveTimes
from clm.timestamps import format_time

T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=2)
PROBLEM = "<script>alert('x')</script> Deployment kube-system/coredns never became available"


def cid(name: str) -> str:
    """A cluster id of the scenario's account and region."""
    return f"aws:123456789012:eu-central-1:{name}"


CANARY, BAKED, FAILED, RUNNING = cid("canary-1"), cid("pre-1"), cid("pre-2"), cid("pre-3")
WAITING_IDS = (cid("prod-1"), cid("prod-2"), cid("prod-3"))
# What each cluster's row shows, in the order of the rows.
STATES = {CANARY: "passed", BAKED: "baking", FAILED: "failed", RUNNING: "running"} | dict.fromkeys(
    WAITING_IDS, "waiting"
)


def minutes(count: int) -> datetime:
    return T0 + timedelta(minutes=count)


def halted_view() -> dict[str, Any]:
    """The view of the scenario at NOW (`at` is NOW)."""
    halt = Halt(FAILED, "pre-2-0123456789ab-1", PROBLEM, minutes(70))
    canary_times = WaveTimes(T0, minutes(20))
    pre_times = WaveTimes(minutes(50))
    state = RolloutState(
        "a1b2c3d4e5f6", T0, HALTED, halt, {"canary": canary_times, "pre-production": pre_times}, admitted=frozenset()
    )
    waves = (
        WaveProgress("canary", PASSED, ((CANARY, DONE),), 1, 1800, canary_times, minutes(50)),
        WaveProgress(
            "pre-production", ROLLING_WAVE, ((BAKED, DONE), (FAILED, WAITING), (RUNNING, STARTED)), 3, 1800, pre_times
        ),
        WaveProgress("production", PENDING, tuple((c, WAITING) for c in WAITING_IDS), 2, 0, WaveTimes()),
    )
    progress = Progress(state, waves, (), f"rollout halted: {FAILED}: {PROBLEM}")
    runs = Runs(
        {
            CANARY: [Run("canary-1-aaaaaaaaaaaa-1", T0, minutes(20), "SUCCEEDED")],
            BAKED: [Run("pre-1-bbbbbbbbbbbb-1", minutes(50), minutes(80), "SUCCEEDED")],
            FAILED: [Run("pre-2-0123456789ab-1", minutes(50), minutes(70), "FAILED")],
            RUNNING: [Run("pre-3-cccccccccccc-1", minutes(55), None, "RUNNING")],
        }
    )
    rollouts = [progress.to_dict()]
    with_runs(rollouts, runs)
    pause = {"paused_at": format_time(minutes(100)), "by": "arn:aws:iam::123456789012:user/ops", "reason": "INC-42"}
    return {"at": format_time(NOW), "policy": "built-in", "paused": pause, "rollouts": rollouts}
