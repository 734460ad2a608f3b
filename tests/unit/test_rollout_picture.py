"""The rollout picture (clm.cli.rollout_picture) as data: each cluster's row coloured by its states over time, wave
rows, halt and pause marks, a time axis in UTC, every registry-supplied string escaped, nothing external."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from copy import deepcopy
from typing import Any

from clm.cli.rollout_picture import BAKING, FAILED, HALTED, PASSED, PAUSED, RUNNING, WAITING, rollout_page
from clm.timestamps import format_time
from tests.unit.rollout_scenario import BAKED, CANARY, NOW, PROBLEM, halted_view, minutes
from tests.unit.rollout_scenario import RUNNING as RUNNING_ID

SVG = "{http://www.w3.org/2000/svg}"


def rows(page: str) -> dict[str, list[tuple[str, str]]]:
    """Each row's label -> its bars (fill, tooltip), in drawing order, from the page's SVG."""
    svg = ET.fromstring(re.search(r"<svg .*</svg>", page, re.S)[0])
    found: dict[str, list[tuple[str, str]]] = {}
    label = None
    for element in svg:
        if element.tag == f"{SVG}text" and element.get("x") == "5":
            label = element.text
            found[label] = []
        elif element.tag == f"{SVG}rect":
            found[label].append((element.get("fill"), element.findtext(f"{SVG}title")))
    return found


def fills(page: str) -> dict[str, list[str]]:
    return {label: [fill for fill, _ in bars] for label, bars in rows(page).items()}


def test_each_cluster_row_shows_its_states_over_time_under_its_wave() -> None:
    drawn = fills(rollout_page(halted_view(), NOW))
    assert list(drawn) == [
        "wave canary (passed)",
        CANARY,
        "wave pre-production (rolling)",
        BAKED,
        "aws:123456789012:eu-central-1:pre-2",
        RUNNING_ID,
        "wave production (pending)",
        "aws:123456789012:eu-central-1:prod-1",
        "aws:123456789012:eu-central-1:prod-2",
        "aws:123456789012:eu-central-1:prod-3",
    ]
    assert drawn["wave canary (passed)"] == drawn[CANARY] == [RUNNING, BAKING, PASSED]  # its run began the rollout
    assert drawn["wave pre-production (rolling)"] == [RUNNING]
    assert drawn[BAKED] == [WAITING, RUNNING, BAKING]  # its wave has not passed: it bakes on
    assert drawn["aws:123456789012:eu-central-1:pre-2"] == [WAITING, RUNNING, FAILED]
    assert drawn[RUNNING_ID] == [WAITING, RUNNING]
    assert drawn["wave production (pending)"] == []
    assert drawn["aws:123456789012:eu-central-1:prod-1"] == [WAITING]


def test_halt_and_pause_are_marked_and_the_axis_reads_utc() -> None:
    page = rollout_page(halted_view(), NOW)
    svg = ET.fromstring(re.search(r"<svg .*</svg>", page, re.S)[0])
    marks = [
        (line.get("stroke"), line.findtext(f"{SVG}title"))
        for line in svg.iter(f"{SVG}line")
        if line.get("stroke-width")
    ]
    assert [stroke for stroke, _ in marks] == [HALTED, PAUSED]
    assert marks[0][1].startswith("halted at 2026-11-27T13:10:00Z by cluster aws:123456789012:eu-central-1:pre-2")
    ticks = [text.text for text in svg.iter(f"{SVG}text") if text.get("text-anchor") == "middle"]
    assert ticks == ["12:00", "12:15", "12:30", "12:45", "13:00", "13:15", "13:30", "13:45", "14:00"]
    assert "rollouts paused since 2026-11-27T13:40:00Z by arn:aws:iam::123456789012:user/ops: INC-42" in page


def test_every_registry_string_is_escaped_and_nothing_is_fetched_or_run() -> None:
    view = halted_view()
    hostile = '"><img src=x onerror=alert(1)>'
    view["rollouts"][0]["version"] = hostile
    view["rollouts"][0]["wave_progress"][2]["wave"] = hostile
    view["rollouts"][0]["wave_progress"][2]["clusters"][0]["id"] = hostile
    page = rollout_page(view, NOW)
    assert PROBLEM not in page and "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "<img" not in page and "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert not re.search(r"<[^>]*\b(src|href)=", page)  # no external asset: no tag has a source
    assert hostile in rows(page)  # as the row's text


def test_clusters_without_a_run_found_are_drawn_from_their_state_and_wave() -> None:
    view = deepcopy(halted_view())
    for wave in view["rollouts"][0]["wave_progress"]:
        for cluster in wave["clusters"]:
            cluster["runs"] = []
    view["runs_error"] = "runs not read: stack Clm not found"
    page = rollout_page(view, NOW)
    drawn = rows(page)
    assert drawn[CANARY] == [(WAITING, f"{CANARY}: waiting"), (PASSED, f"{CANARY}: at the version, no run found")]
    [waited, running] = drawn[RUNNING_ID]
    assert (waited[0], running) == (WAITING, (RUNNING, f"{RUNNING_ID}: started, its run not found"))
    assert "runs not read: stack Clm not found; clusters drawn from their state and their wave" in page


def test_a_failed_run_then_a_good_one_after_a_resume() -> None:
    view: dict[str, Any] = halted_view()
    [failed] = [c for c in view["rollouts"][0]["wave_progress"][1]["clusters"] if c["runs"][0]["status"] == "FAILED"]
    failed["runs"].append({"execution": "again", "started_at": format_time(minutes(90)), "status": "RUNNING"})
    assert fills(rollout_page(view, NOW))[failed["id"]] == [WAITING, RUNNING, FAILED, RUNNING]
