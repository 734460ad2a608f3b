"""RFC 3339 timestamps as Kubernetes and CLM write them (UTC, whole seconds)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def parse_time(text: str) -> datetime:
    """An aware UTC datetime from RFC 3339 ("2024-05-01T10:00:00Z", offsets and fractions too)."""
    return datetime.fromisoformat(text).astimezone(UTC)


def format_time(moment: datetime, *, round_up: bool = False) -> str:
    """RFC 3339 in UTC with whole seconds, as Go's time.RFC3339 and Kubernetes print it.

    `round_up` rounds a fraction up: a clock start stored so never makes a wait shorter.
    """
    if round_up and moment.microsecond:
        moment += timedelta(microseconds=1_000_000 - moment.microsecond)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_now() -> datetime:
    """The current time, aware, in UTC."""
    return datetime.now(UTC)
