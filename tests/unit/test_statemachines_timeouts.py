"""Steps that read the configuration: a timeout or throttling is retried with back-off, then named in the problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

STATEMACHINES = Path(__file__).parents[2] / "statemachines"
GIVE_UP = {"Sandbox.Timedout", "States.Timeout", "Lambda.TooManyRequestsException"}


def states(name: str) -> dict:
    return json.loads((STATEMACHINES / f"{name}.asl.json").read_text())["States"]


@pytest.mark.parametrize(
    ("machine", "state"), [("provision", "Begin"), ("provision", "Render"), ("reconcile", "Reconcile")]
)
def test_config_reading_steps_retry_timeouts_and_throttling_with_back_off(machine, state):
    retriers = states(machine)[state]["Retry"]
    retried = {error for retrier in retriers for error in retrier["ErrorEquals"]}
    assert retried >= GIVE_UP
    assert all(r["BackoffRate"] > 1 and r["IntervalSeconds"] >= 2 for r in retriers)


def test_render_that_gives_up_records_a_problem_naming_the_step():
    provision = states("provision")
    [catcher, *_] = provision["Render"]["Catch"]
    assert set(catcher["ErrorEquals"]) == GIVE_UP and catcher["ResultPath"] == "$.error"
    gave_up = provision[catcher["Next"]]
    assert gave_up["Parameters"]["Step"].startswith("Render")
    assert gave_up["ResultPath"] == "$.error" and gave_up["Next"] == "ResumeAfterFailure"
    assert provision["ResumeAfterFailure"]["Next"] == "RecordFailure"
    assert provision["RecordFailure"]["Parameters"]["error.$"] == "$.error"
