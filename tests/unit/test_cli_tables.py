"""`clm status` and `clm registry list` in an 80-column terminal: ids and versions short and on one line each, free
text in notes under the table; `-o wide` shows them in full; JSON is unchanged."""

from __future__ import annotations

import json

import pytest

from clm.cli.output import console, short_id, short_version
from clm.model import Problem
from tests.unit.test_cli_helpers import KUBE_1, KUBE_2, clm, deploy_clm_stack  # noqa: F401  (the `clm` fixture)

WAITING = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}
CURRENT = "3f9c2a7b1d04#Qm9vdGhhc2hiYXNlNjR1cmxzYWZlMDE"  # config digest # spec hash, as CLM writes them
NEXT = "a81e5c0f77d2#ZGlmZmVyZW50aGFzaGJhc2U2NHVybHM"


@pytest.fixture
def busy(clm, aws, monkeypatch):  # noqa: F811
    """Both example clusters provisioned once, kube-1 being updated by a running execution, kube-2 with a problem;
    an 80-column console."""
    run, store = clm
    for cluster_id in (KUBE_1, KUBE_2):
        store.record_success(cluster_id, CURRENT)
    store.start_update(KUBE_1, NEXT)
    store.record_problem(KUBE_2, Problem(title="StackFailed: stack kube-2-worker-default failed: ROLLBACK_COMPLETE"))
    arn = deploy_clm_stack(aws, WAITING)
    aws.client("stepfunctions").start_execution(
        stateMachineArn=arn, name="kube-1-5d41402abc4b-2925412", input=json.dumps({"cluster_id": KUBE_1})
    )
    monkeypatch.setattr(console, "width", 80)
    return run


def lines(output: str) -> list[str]:
    return output.splitlines()


@pytest.mark.parametrize("command", [["status"], ["registry", "list"]])
def test_tables_fit_80_columns_with_ids_and_versions_short_on_one_line(busy, command):
    output = busy(*command).output
    assert max(len(line) for line in lines(output)) <= 80
    for value in ("kube-1", "kube-2", "3f9c2a7#Qm9vdGh", "a81e5c0#ZGlmZmV"):
        assert any(value in line for line in lines(output)), value
    assert KUBE_1 not in output and CURRENT not in output


def test_status_table_rows_are_one_line_their_free_text_in_notes(busy):
    output = busy("status").output
    kube_1, kube_2 = (next(line for line in lines(output) if line.startswith(name)) for name in ("kube-1", "kube-2"))
    assert kube_1.split() == ["kube-1", "requested", "3f9c2a7#Qm9vdGh", "a81e5c0#ZGlmZmV", "[1]", "-"]
    assert kube_2.split() == ["kube-2", "ready", "3f9c2a7#Qm9vdGh", "-", "-", "[2]"]
    assert lines(output)[-2:] == [
        "[1] kube-1-5d41402abc4b-2925412",
        "[2] StackFailed: stack kube-2-worker-default failed: ROLLBACK_COMPLETE",
    ]


@pytest.mark.parametrize("command", [["status"], ["registry", "list"]])
def test_wide_shows_ids_and_versions_in_full(busy, monkeypatch, command):
    monkeypatch.setattr(console, "width", 250)
    output = busy("-o", "wide", *command).output
    for value in (KUBE_1, KUBE_2, CURRENT, NEXT):
        assert value in output, value
    assert "current_version" in output


@pytest.mark.parametrize("command", [["status"], ["registry", "list"]])
def test_json_keeps_full_ids_and_versions(busy, command):
    rows = json.loads(busy("-o", "json", *command).output)
    assert [(row["id"], row["current_version"]) for row in rows] == [(KUBE_1, CURRENT), (KUBE_2, CURRENT)]


def test_shorteners():
    assert short_id(KUBE_1) == "kube-1"
    assert short_version(CURRENT) == "3f9c2a7#Qm9vdGh"
    assert short_version("v2#abc") == "v2#abc"
