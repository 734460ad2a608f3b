"""The maintenance_window item: its syntax, midnight crossings, DST change days, and what a registry writer could
put there (clm.rolling.window)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from clm.rolling.window import MAX_CHARS, MaintenanceWindowInvalid, parse_window

BERLIN = ZoneInfo("Europe/Berlin")


def at(*parts: int, tz: ZoneInfo = BERLIN) -> datetime:
    return datetime(*parts, tzinfo=tz)


def test_weekday_nights_cross_midnight() -> None:
    window = parse_window("Mon-Fri 22:00-04:00 Europe/Berlin", "c1")
    # Friday 2026-11-27 22:00 opens the night that ends on Saturday 04:00.
    assert not window.is_open(at(2026, 11, 27, 21, 59))
    assert window.is_open(at(2026, 11, 27, 22, 0))
    assert window.is_open(at(2026, 11, 28, 3, 59))
    assert not window.is_open(at(2026, 11, 28, 4, 0))
    assert window.closes_at(at(2026, 11, 28, 1, 0)) == at(2026, 11, 28, 4, 0)
    # Saturday and Sunday open no night: the next is Monday's, 22:00.
    assert window.next_open(at(2026, 11, 28, 12, 0)) == at(2026, 11, 30, 22, 0)
    assert window.closed_at(at(2026, 11, 28, 12, 0)) == at(2026, 11, 28, 4, 0)
    # Monday before 04:00 belongs to Sunday's night, which there is not.
    assert not window.is_open(at(2026, 11, 30, 2, 0))


def test_spans_that_touch_are_one_opening() -> None:
    window = parse_window("Mon-Fri 22:00-04:00 Europe/Berlin; Sat 00:00-24:00 Europe/Berlin", "c1")
    # Friday night runs into Saturday's whole day: one opening from Friday 22:00 to Sunday 00:00.
    assert window.closes_at(at(2026, 11, 27, 23, 0)) == at(2026, 11, 29, 0, 0)
    assert window.closed_at(at(2026, 11, 29, 0, 0, 1)) == at(2026, 11, 29, 0, 0)


def test_open_all_week_never_closes() -> None:
    window = parse_window("mon-sun 00:00-24:00 UTC", "c1")
    assert window.is_open(at(2026, 11, 28, 12, 0))
    assert window.closes_at(at(2026, 11, 28, 12, 0)) is None
    assert window.closed_at(at(2026, 11, 28, 12, 0)) is None


def test_day_lists_and_ranges_that_wrap() -> None:
    window = parse_window("Fri-Mon,Wed 10:00-11:00 UTC", "c1")
    days = {d for d in range(7) if window.is_open(datetime(2026, 11, 23 + d, 10, 30, tzinfo=UTC))}  # 23rd: Monday
    assert days == {0, 2, 4, 5, 6}


def test_seconds_are_allowed() -> None:
    window = parse_window("Sat 10:00:05-10:00:10 UTC", "c1")
    assert window.is_open(datetime(2026, 11, 28, 10, 0, 5, tzinfo=UTC))
    assert not window.is_open(datetime(2026, 11, 28, 10, 0, 10, tzinfo=UTC))


def test_spring_forward_night_is_an_hour_shorter() -> None:
    """Europe/Berlin skips 02:00-03:00 on 2026-03-29: the 01:00-05:00 window is open 3 hours that night."""
    window = parse_window("Sun 01:00-05:00 Europe/Berlin", "c1")
    opens = window.next_open(at(2026, 3, 28, 12, 0))
    assert opens == at(2026, 3, 29, 1, 0)
    assert window.closes_at(opens) - opens == timedelta(hours=3)
    # A span starting in the skipped hour opens when the clock would have shown it (zoneinfo: the offset before).
    skipped = parse_window("Sun 02:30-04:00 Europe/Berlin", "c1")
    assert skipped.next_open(at(2026, 3, 28, 12, 0)) == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)


def test_fall_back_night_is_an_hour_longer() -> None:
    """Europe/Berlin repeats 02:00-03:00 on 2026-10-25: the window is open 5 hours that night, 4 the next week."""
    window = parse_window("Sun 01:00-05:00 Europe/Berlin", "c1")
    opens = window.next_open(at(2026, 10, 24, 12, 0))
    assert window.closes_at(opens) - opens == timedelta(hours=5)
    later = window.next_open(at(2026, 10, 31, 12, 0))
    assert window.closes_at(later) - later == timedelta(hours=4)


def test_night_crossing_midnight_on_a_dst_change() -> None:
    window = parse_window("Sat 22:00-04:00 America/New_York", "c1")
    ny = ZoneInfo("America/New_York")  # clocks go back 02:00 -> 01:00 on Sunday 2026-11-01
    opens = window.next_open(at(2026, 10, 31, 12, 0, tz=ny))
    assert opens == at(2026, 10, 31, 22, 0, tz=ny)
    assert window.closes_at(opens) == at(2026, 11, 1, 4, 0, tz=ny)
    assert window.closes_at(opens) - opens == timedelta(hours=7)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "is not DAYS HH:MM-HH:MM ZONE"),
        ("always", "is not DAYS HH:MM-HH:MM ZONE"),
        ("never", "is not DAYS HH:MM-HH:MM ZONE"),
        ("Mon-Fri 22:00-04:00", "is not DAYS HH:MM-HH:MM ZONE"),  # no zone: never the host's
        ("Mon 22:00-22:00 UTC", "starts and ends at 22:00"),  # empty, or a whole day? say which
        ("Mon 00:00-00:00 UTC", "starts and ends at 00:00"),
        ("Mon 24:00-02:00 UTC", "starts at 23:59:59 at the latest"),
        ("Mon 10:60-11:00 UTC", "time '10:60'"),
        ("Mon 9:00-11:00 UTC", "is not DAYS"),
        ("Mon 10:00-11:00 UTC;", "is not DAYS"),  # an empty span
        ("Mo 10:00-11:00 UTC", "is not DAYS"),
        ("Mox 10:00-11:00 UTC", "day 'mox'"),
        ("Mon 10:00-11:00 Europe/Nowhere", "time zone 'Europe/Nowhere' is not an IANA time zone"),
        ("Mon 10:00-11:00 ../../etc/passwd", "is not DAYS"),
        ("Mon 10:00-11:00 /etc/passwd", "is not DAYS"),
        ("Mon 10:00-11:00 Europe/../../../etc/passwd", "is not DAYS"),
        ("Mon 10:00-11:00 Europe\\Berlin", "is not DAYS"),
        ("Mon 10:00-11:00 localtime", "is not an IANA time zone"),
        ("Mon 10:00-11:00 Europe/Berlin\x00", "is not DAYS"),
        ("Mon\u00a010:00-11:00 UTC", "is not DAYS"),
        ("Mon 10:00-11:00 Europe/Berlin extra", "is not DAYS"),
    ],
)
def test_bad_windows_are_refused_naming_cluster_and_item(text: str, said: str) -> None:
    with pytest.raises(MaintenanceWindowInvalid) as refused:
        parse_window(text, "aws:123456789012:eu-central-1:kube-1")
    message = str(refused.value)
    assert message.startswith("cluster aws:123456789012:eu-central-1:kube-1: config item maintenance_window: ")
    assert said in message


def test_huge_items_are_refused_before_parsing() -> None:
    with pytest.raises(MaintenanceWindowInvalid, match="a window is at most 500"):
        parse_window("Mon 10:00-11:00 UTC; " * 10_000, "c1")
    with pytest.raises(MaintenanceWindowInvalid, match="a window has at most 21"):
        parse_window("; ".join(["Mon 10:00-11:00 UTC"] * 22), "c1")
    long_zone = "Mon 10:00-11:00 " + "A" * (MAX_CHARS - 20)
    with pytest.raises(MaintenanceWindowInvalid) as refused:
        parse_window(long_zone, "c1")
    assert len(str(refused.value)) < 250  # the message quotes a bounded part of what it refuses


def test_narrowest_window_still_opens_every_week() -> None:
    """No accepted window is "never": every span opens on some day each week (a minute-wide one included)."""
    window = parse_window("Sun 02:30-02:31 Europe/Berlin", "c1")
    now = at(2026, 11, 28, 12, 0)
    assert window.next_open(now) == at(2026, 11, 29, 2, 30)
