"""A cluster's maintenance window (config item `maintenance_window`): when disruptive work may run.

Pure: parsing and answering questions about a time, nothing read from anywhere but the time-zone database.
The syntax (docs/rollouts.md, "Maintenance windows"): spans separated by `;`, each `DAYS START-END ZONE`, e.g.
`Mon-Fri 22:00-04:00 Europe/Berlin; Sat 00:00-24:00 Europe/Berlin`. A span opens on each of its days at START
(local time) and closes at END the same day, or the next day when END is not after START (it crosses midnight).
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from clm.errors import ClmError

WINDOW_ITEM = "maintenance_window"
MAX_CHARS = 500  # a week of distinct spans fits; longer is refused before parsing
MAX_SPANS = 21
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_SPAN = re.compile(
    r"(?P<days>[A-Za-z]{3}(?:-[A-Za-z]{3})?(?:,[A-Za-z]{3}(?:-[A-Za-z]{3})?)*)"
    r" +(?P<start>\d\d:\d\d(?::\d\d)?)-(?P<end>\d\d:\d\d(?::\d\d)?)"
    r" +(?P<zone>[A-Za-z][A-Za-z0-9_+-]{0,29}(?:/[A-Za-z0-9][A-Za-z0-9_+-]{0,29}){0,2})"
)
_CLOCK = re.compile(r"(\d\d):(\d\d)(?::(\d\d))?")
_SEARCH_DAYS = 9  # occurrences looked at either side of a time: a weekly window opens within 8 local days
ALWAYS = timedelta(days=7)  # a window open this long without a break is open all the time


class MaintenanceWindowInvalid(ClmError):
    """A cluster's maintenance_window config item cannot be read: the cluster's disruptive work waits."""

    asl_name = "MaintenanceWindowInvalid"

    def __init__(self, cluster_id: str, reason: str):
        super().__init__(f"cluster {cluster_id}: config item {WINDOW_ITEM}: {reason}")


@dataclass(frozen=True)
class Span:
    """One part of a window: on `days` (0 = Monday), from `start` to `end` local time in `zone`; `end` not after
    `start` ends the next day (`end` is None for 24:00)."""

    days: frozenset[int]
    start: time
    end: time | None
    zone: str

    def occurrences(self, around: datetime) -> list[tuple[datetime, datetime]]:
        """The span's (opens, closes) in UTC whose opening local day is within _SEARCH_DAYS of `around`."""
        tz = zoneinfo.ZoneInfo(self.zone)
        today = around.astimezone(tz).date()
        found = []
        for offset in range(-_SEARCH_DAYS, _SEARCH_DAYS + 1):
            day = today + timedelta(days=offset)
            if day.weekday() in self.days:
                found.append((_utc(day, self.start, tz), _utc(self._end_day(day), self.end or time(0), tz)))
        return found

    def _end_day(self, day: date) -> date:
        return day if self.end is not None and self.end > self.start else day + timedelta(days=1)


def _utc(day: date, clock: time, tz: zoneinfo.ZoneInfo) -> datetime:
    """The UTC time of a local wall-clock time (a time skipped by a DST change counts as the offset before it; a
    time that occurs twice, as its first occurrence: zoneinfo's fold=0)."""
    return datetime.combine(day, clock, tzinfo=tz).astimezone(UTC)


@dataclass(frozen=True)
class MaintenanceWindow:
    """The union of a window's spans, as the item said (`text`)."""

    spans: tuple[Span, ...]
    text: str

    def intervals(self, around: datetime) -> list[tuple[datetime, datetime]]:
        """The window's open intervals near `around` (UTC), sorted and merged where they touch or overlap."""
        merged: list[tuple[datetime, datetime]] = []
        for opens, closes in sorted(o for span in self.spans for o in span.occurrences(around)):
            if closes <= opens:  # both ends in one DST gap or fold: nothing open
                continue
            if merged and opens <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], closes))
            else:
                merged.append((opens, closes))
        return merged

    def is_open(self, now: datetime) -> bool:
        """Whether the window is open at `now` (an aware time)."""
        return any(opens <= now < closes for opens, closes in self.intervals(now))

    def next_open(self, now: datetime) -> datetime:
        """`now` when the window is open, else when it next opens (UTC)."""
        if self.is_open(now):
            return now
        return min(opens for opens, _ in self.intervals(now) if opens > now)

    def closes_at(self, now: datetime) -> datetime | None:
        """When the window open at `now` closes (UTC); None when it is closed at `now` or open for a week or more
        without a break (always open)."""
        for opens, closes in self.intervals(now):
            if opens <= now < closes:
                return None if closes - now >= ALWAYS else closes
        return None

    def closed_at(self, now: datetime) -> datetime | None:
        """When the window last closed before `now` (UTC), None when it is open."""
        if self.is_open(now):
            return None
        return max(closes for _, closes in self.intervals(now) if closes <= now)


def parse_window(text: str, cluster_id: str) -> MaintenanceWindow:
    """The window `text` (the item's value) describes; MaintenanceWindowInvalid naming the cluster, the item and
    what is wrong (never a window read as always open)."""
    if len(text) > MAX_CHARS:
        raise MaintenanceWindowInvalid(cluster_id, f"{len(text):,} characters: a window is at most {MAX_CHARS}")
    parts = [part.strip() for part in text.split(";")]
    if len(parts) > MAX_SPANS:
        raise MaintenanceWindowInvalid(cluster_id, f"{len(parts)} spans: a window has at most {MAX_SPANS}")
    return MaintenanceWindow(tuple(_span(part, cluster_id) for part in parts), text)


def _span(part: str, cluster_id: str) -> Span:
    match = _SPAN.fullmatch(part)
    if not match:
        shown = part if len(part) <= 60 else part[:60] + "..."
        raise MaintenanceWindowInvalid(
            cluster_id, f"{shown!r} is not DAYS HH:MM-HH:MM ZONE (e.g. 'Mon-Fri 22:00-04:00 Europe/Berlin')"
        )
    days = _days(match["days"], cluster_id)
    start, end = _clock(match["start"], cluster_id), _clock(match["end"], cluster_id)
    if start is None:
        raise MaintenanceWindowInvalid(cluster_id, f"{part!r}: a span starts at 23:59:59 at the latest")
    if end == start:
        raise MaintenanceWindowInvalid(cluster_id, f"{part!r}: starts and ends at {match['start']} (say 00:00-24:00)")
    return Span(days, start, end, _zone(match["zone"], cluster_id))


def _days(text: str, cluster_id: str) -> frozenset[int]:
    """`Mon-Fri,Sun` -> {0, 1, 2, 3, 4, 6}; a range may wrap around the week (`Fri-Mon`)."""
    days: set[int] = set()
    for part in text.lower().split(","):
        first, _, last = part.partition("-")
        for name in (first, last or first):
            if name not in DAYS:
                raise MaintenanceWindowInvalid(cluster_id, f"day {name!r}: one of {', '.join(d.title() for d in DAYS)}")
        begin, stop = DAYS.index(first), DAYS.index(last or first)
        days.update((begin + step) % 7 for step in range((stop - begin) % 7 + 1))
    return frozenset(days)


def _clock(text: str, cluster_id: str) -> time | None:
    """`HH:MM[:SS]` -> a time of day; `24:00` -> None (the end of the day)."""
    match = _CLOCK.fullmatch(text)
    hours, minutes, seconds = (int(group or 0) for group in match.groups()) if match else (99, 0, 0)
    if (hours, minutes, seconds) == (24, 0, 0):
        return None
    if hours > 23 or minutes > 59 or seconds > 59:
        raise MaintenanceWindowInvalid(cluster_id, f"time {text!r}: from 00:00 to 24:00")
    return time(hours, minutes, seconds)


def _zone(name: str, cluster_id: str) -> str:
    """An IANA time-zone name the time-zone database has (never a path: the pattern allows no '.' or '\\')."""
    if name not in _zones():
        raise MaintenanceWindowInvalid(cluster_id, f"time zone {name!r} is not an IANA time zone (e.g. Europe/Berlin)")
    return name


@functools.cache
def _zones() -> frozenset[str]:
    """The names the time-zone database knows (read once: it lists files), less the host's own and its helpers."""
    return frozenset(zoneinfo.available_timezones()) - {"localtime", "posixrules", "Factory"}
