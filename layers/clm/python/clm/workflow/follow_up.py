"""Reconcile follows the runs it had to defer: it looks again every FOLLOW_SECONDS while runs wait for a free slot
(or for their cluster's going run to end).

Without it, clusters beyond `clm:maxRunning` would wait for the next 15-minute schedule: a fleet of 1,000 clusters
at 10 at a time would take 100 ticks, a day. With it, a slot freed by a finished run is taken within
FOLLOW_SECONDS. One loop is enough: a reconcile execution that finds an older one running leaves the following to
it (the older one reads the registry and the configuration again at every look, so it sees what the newer was
started for). A loop ends after LOOP_SECONDS (its history stays far below Step Functions' 25,000 events: 9 per
look); the schedule starts the next.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

FOLLOW_SECONDS = 30
LOOP_SECONDS = 6 * 3600


def state_machine_of(execution_arn: str) -> str:
    """`arn:aws:states:<region>:<account>:execution:<machine>:<name>` -> the state machine's ARN."""
    parts = execution_arn.split(":")
    return ":".join([*parts[:5], "stateMachine", parts[6]])


def loop_state(sfn: Any, execution_arn: str) -> tuple[str | None, datetime | None]:
    """(an older running execution of the same state machine, this execution's start), as listed now."""
    pages = sfn.get_paginator("list_executions").paginate(
        stateMachineArn=state_machine_of(execution_arn), statusFilter="RUNNING"
    )
    running = sorted(
        ((e["startDate"], e["executionArn"]) for page in pages for e in page["executions"]), key=lambda e: e
    )
    started = next((start for start, arn in running if arn == execution_arn), None)
    if started is None:  # not listed yet (ListExecutions is eventually consistent): do not yield to anyone
        return None, None
    older = next((arn for start, arn in running if (start, arn) < (started, execution_arn)), None)
    return older, started


def follow_up(
    waiting: int | bool, started: datetime | None, now: datetime | None = None, wake_at: datetime | None = None
) -> dict[str, Any]:
    """Whether to look again, and when: in FOLLOW_SECONDS while runs are `waiting` (deferred, behind their cluster's
    going run, or a rollout's to follow), else at `wake_at` (a rollout's bake ends), so long as the loop is younger
    than LOOP_SECONDS then."""
    now = now or datetime.now(UTC)
    age = 0.0 if started is None else (now - started).total_seconds()
    if waiting:
        return {"again": age < LOOP_SECONDS, "wait_seconds": FOLLOW_SECONDS}
    if wake_at is not None:
        wait = max(1, math.ceil((wake_at - now).total_seconds()))
        return {"again": age + wait < LOOP_SECONDS, "wait_seconds": wait}
    return {"again": False, "wait_seconds": FOLLOW_SECONDS}
