"""When a cluster may take disruptive work (a node roll): inside its maintenance window and outside every fleet
freeze. Pure: the window, the freezes and the time are given (docs/rollouts.md, "Maintenance windows and
freezes")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from clm.errors import ClmError
from clm.rolling.window import MaintenanceWindow
from clm.rollout.policy import Freeze
from clm.timestamps import format_time

MAX_STEPS = 200  # freezes and window closings to step over when looking for the next opening


@dataclass(frozen=True)
class Closed:
    """Disruptive work may not run now: `why`, since when (`closed_at`, None when not known) and when it may next
    (`opens`, None when no opening is found)."""

    why: str
    closed_at: datetime | None
    opens: datetime | None


def closed(window: MaintenanceWindow | None, freezes: Sequence[Freeze], now: datetime) -> Closed | None:
    """Why disruptive work may not run at `now` (an aware time), None when it may (no window: always open)."""
    frozen = [freeze for freeze in freezes if freeze.holds(now)]
    if frozen:
        freeze = min(frozen, key=lambda f: f.start)
        why = f"fleet freeze until {format_time(max(f.end for f in frozen))}: {freeze.reason}"
        return Closed(why, max(f.start for f in frozen), next_allowed(window, freezes, now))
    if window is not None and not window.is_open(now):
        return Closed(f"maintenance window {window.text!r}", window.closed_at(now), window.next_open(now))
    return None


def next_allowed(window: MaintenanceWindow | None, freezes: Sequence[Freeze], now: datetime) -> datetime | None:
    """The first time from `now` when the window is open and no freeze holds; None when none is found in
    MAX_STEPS steps (freezes back to back with the window's closings)."""
    moment = now
    for _ in range(MAX_STEPS):
        frozen = [freeze.end for freeze in freezes if freeze.holds(moment)]
        if frozen:
            moment = max(frozen)
        elif window is not None and not window.is_open(moment):
            moment = window.next_open(moment)
        else:
            return moment
    return None


class MaintenanceWindowClosed(ClmError):
    """Disruptive work would start outside the cluster's window or during a freeze: the run stops before it (a
    roll in progress: at its node boundary, no node left half-drained); the next run continues."""

    asl_name = "MaintenanceWindowClosed"

    def __init__(self, cluster_id: str, what: str, shut: Closed, rolling: bool):
        opens = format_time(shut.opens) if shut.opens else "no opening found"
        if rolling:
            since = format_time(shut.closed_at) if shut.closed_at else "an unknown time"
            head = f"stopped at node boundary: window closed at {since} (opens {opens})"
        else:
            head = f"waiting for maintenance window (opens {opens})"
        super().__init__(f"{head}; cluster {cluster_id}, {what}: {shut.why}")
