"""`clm rollout status --html`: a picture of each rollout over time, a row per wave and under it a row per cluster
(in the waves' order), coloured by state: waiting, running, baking, passed, failed; a halt and a pause are marked.

Pure: the status view (what `clm rollout status -o json` prints, its clusters' `runs` included) and the time in,
an HTML page out (clm.cli.timeline_svg). How a cluster's states follow from its runs: docs/rollouts.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from clm.cli.timeline_svg import Bar, Mark, Row, note, timeline_page, timeline_svg
from clm.timestamps import format_time, parse_time

WAITING, RUNNING, BAKING, PASSED, FAILED = "#c8c8c8", "#4080d0", "#f0a030", "#40a060", "#d04040"
HALTED, PAUSED = "#800000", "#8050c0"
LEGEND = (
    ("waiting", WAITING),
    ("running", RUNNING),
    ("baking", BAKING),
    ("passed", PASSED),
    ("failed", FAILED),
    ("halted", HALTED),
    ("paused", PAUSED),
)
# Tick spacings, seconds: the first that leaves at most MAX_TICKS ticks on the axis.
STEPS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)
MAX_TICKS = 10


def rollout_page(view: dict[str, Any], now: datetime) -> str:
    """The page of every rollout of `view` as it is at `now`."""
    body = []
    pause = view.get("paused")
    if pause:
        text = f"rollouts paused since {pause['paused_at']} by {pause['by']}: {pause.get('reason') or '-'}"
        body.append(note(text, PAUSED, bold=True))
    if not view["rollouts"]:
        body.append(note("no rollout: every cluster is at its configuration version"))
    for rollout in view["rollouts"]:
        body.append(_rollout(rollout, pause, now))
    body += [note(text, "#555") for text in _reading(view)]
    return timeline_page(f"CLM rollouts at {format_time(now)}", LEGEND, "".join(body))


def _reading(view: dict[str, Any]) -> list[str]:
    """What the picture could not know: runs not read, or some left unread."""
    if view.get("runs_error"):
        return [f"{view['runs_error']}; clusters drawn from their state and their wave's times only"]
    left = (view.get("runs_read") or {}).get("not_described", 0)
    unread = f"{left} run(s) not started by reconcile left unread (the bound): their clusters may miss a run"
    return [unread] if left else []


def _rollout(rollout: dict[str, Any], pause: dict[str, Any] | None, now: datetime) -> str:
    """A rollout's notes and timeline, from its start to `now`."""
    origin = parse_time(rollout["started_at"])
    end = max((now - origin).total_seconds(), 1.0)
    clock = _Clock(origin, end)
    parts = [note(f"rollout of configuration {rollout['version']}: {rollout['state']}", bold=True)]
    halt = rollout.get("halt")
    waiting = "" if halt else f"; waiting for {rollout['waiting_for']}"  # a halt's own note says what it waits for
    parts.append(note(f"started {rollout['started_at']}{waiting}"))
    marks = []
    if halt:
        text = f"halted at {halt['at']} by cluster {halt['cluster_id']} (run {halt['execution']}): {halt['problem']}"
        parts.append(note(text, HALTED, bold=True))
        marks.append(Mark(clock.at(halt["at"]), HALTED, text))
    if pause:
        marks.append(Mark(clock.at(pause["paused_at"]), PAUSED, f"paused at {pause['paused_at']}"))
    rows = []
    for wave in rollout["wave_progress"]:
        rows.append(Row(f"wave {wave['wave']} ({wave['state']})", _wave_bars(wave, clock), heading=True))
        rows += [Row(cluster["id"], _cluster_bars(cluster, wave, clock)) for cluster in wave["clusters"]]
    parts.append(timeline_svg(rows, end, clock.ticks(), marks))
    return "".join(parts)


class _Clock:
    """Times of a rollout as seconds from its start, clipped to the axis (0 to `end`)."""

    def __init__(self, origin: datetime, end: float):
        self.origin, self.end = origin, end

    def at(self, text: str | None, default: float | None = None) -> float:
        """Seconds of RFC 3339 `text` (or `default` when it is None; the axis' end without one)."""
        if text is None:
            return self.end if default is None else default
        return min(max((parse_time(text) - self.origin).total_seconds(), 0.0), self.end)

    def ticks(self) -> list[tuple[float, str]]:
        """Grid lines at whole multiples of a step that gives at most MAX_TICKS, labelled in UTC."""
        step = next((step for step in STEPS if self.end / step <= MAX_TICKS), STEPS[-1])
        shape = "%H:%M" if self.end < 86400 else "%m-%d %H:%M"
        first = -(self.origin.timestamp() % step) % step
        count = int((self.end - first) // step) + 1
        seconds = [first + index * step for index in range(max(count, 0))]
        return [(second, (self.origin + timedelta(seconds=second)).strftime(shape)) for second in seconds]


def _wave_bars(wave: dict[str, Any], clock: _Clock) -> tuple[Bar, ...]:
    """A wave: rolling from its start until every cluster is done, baking until its bake ends, then passed."""
    if "started_at" not in wave:
        return ()
    start, done = clock.at(wave["started_at"]), clock.at(wave.get("completed_at"))
    baked = clock.at(wave.get("bake_until"), done)
    bars = [Bar(start, done, RUNNING, f"wave {wave['wave']}: rolling from {wave['started_at']}")]
    if baked > done:
        bars.append(Bar(done, baked, BAKING, f"wave {wave['wave']}: baking until {wave.get('bake_until')}"))
    if wave["state"] == "passed":
        bars.append(Bar(baked, clock.end, PASSED, f"wave {wave['wave']}: passed"))
    return tuple(bars)


def _cluster_bars(cluster: dict[str, Any], wave: dict[str, Any], clock: _Clock) -> tuple[Bar, ...]:
    """A cluster: waiting until its first run; running while a run runs; failed after a failed run (until the
    next); after a run that succeeded, baking until its wave's bake ends, then passed. Without a run found:
    at the version, passed from its wave's completion; started, running from its wave's start; else waiting."""
    name, runs = cluster["id"], cluster.get("runs") or []
    if not runs:
        if cluster["state"] == "done":
            done = clock.at(wave.get("completed_at"), 0.0)
            return (*_waited(name, done), Bar(done, clock.end, PASSED, f"{name}: at the version, no run found"))
        if cluster["state"] == "started":
            start = clock.at(wave.get("started_at"), 0.0)
            return (*_waited(name, start), Bar(start, clock.end, RUNNING, f"{name}: started, its run not found"))
        return _waited(name, clock.end)
    bars = list(_waited(name, clock.at(runs[0]["started_at"])))
    for index, run in enumerate(runs):
        start, stop = clock.at(run["started_at"]), clock.at(run.get("stopped_at"))
        bars.append(Bar(start, stop, RUNNING, f"{name}: run {run['execution']} from {run['started_at']}"))
        if "stopped_at" not in run:
            continue
        following = clock.at(runs[index + 1]["started_at"]) if index + 1 < len(runs) else clock.end
        if run["status"] != "SUCCEEDED":
            bars.append(Bar(stop, following, FAILED, f"{name}: run {run['execution']} {run['status']}"))
        else:
            baked = max(min(clock.at(wave.get("bake_until") or wave.get("completed_at")), following), stop)
            if baked > stop:
                bars.append(Bar(stop, baked, BAKING, f"{name}: succeeded, baking with wave {wave['wave']}"))
            if baked < following:
                bars.append(Bar(baked, following, PASSED, f"{name}: passed"))
    return tuple(bars)


def _waited(name: str, until: float) -> tuple[Bar, ...]:
    return (Bar(0.0, until, WAITING, f"{name}: waiting"),) if until > 0 else ()
