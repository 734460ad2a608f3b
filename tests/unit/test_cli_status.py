"""`clm status` on in-process moto: the registry's view of each cluster plus the provision executions running for it."""

from __future__ import annotations

import json

import pytest
import yaml

from clm.cli.main import describe_error
from clm.cli.output import console
from clm.model import Problem
from tests.unit.test_cli_helpers import KUBE_1, KUBE_2, clm, deploy_clm_stack  # noqa: F401  (the `clm` fixture)

HOME = {"account": "123456789012", "region": "eu-central-1"}
WAITING = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}


@pytest.fixture
def running(clm, aws):  # noqa: F811
    """The stack deployed, a provision execution running for kube-1 and one for a cluster gone from the registry,
    kube-2 with a problem and an update in progress."""
    run, store = clm
    arn = deploy_clm_stack(aws, WAITING)
    sfn = aws.client("stepfunctions")
    started = sfn.start_execution(stateMachineArn=arn, input=json.dumps({"cluster_id": KUBE_1, "reason": "test"}))
    sfn.start_execution(stateMachineArn=arn, input=json.dumps({"cluster_id": "aws:1:gone", "reason": "test"}))
    store.start_update(KUBE_2, "v2#abc")
    store.record_problem(KUBE_2, Problem(title="StackFailed: stack kube-2 failed"))
    return run, started["executionArn"].rsplit(":", 1)[1]


def test_status_shows_versions_running_executions_and_the_last_problem(running, monkeypatch):
    run, execution = running
    rows = json.loads(run("-o", "json", "status").output)
    assert rows == [
        {
            "id": KUBE_1,
            **HOME,
            "lifecycle": "requested",
            "current_version": None,
            "next_version": None,
            "running_execution": execution,
            "blocked_drains": [],  # none in its node pool rolls (clm.cli.blocked_drains)
            "last_problem": None,
        },
        {
            "id": KUBE_2,
            **HOME,
            "lifecycle": "ready",
            "current_version": None,
            "next_version": "v2#abc",
            "running_execution": None,
            "blocked_drains": [],
            "last_problem": "StackFailed: stack kube-2 failed",
        },
    ]
    assert yaml.safe_load(run("-o", "yaml", "status").output) == rows
    monkeypatch.setattr(console, "width", 250)
    table = run("status").output
    assert execution in table and "StackFailed: stack kube-2 failed" in table and "2 clusters in clm-registry" in table


def test_status_of_given_clusters(running):
    run, _ = running
    assert [row["id"] for row in json.loads(run("-o", "json", "status", KUBE_2).output)] == [KUBE_2]
    result = run("status", "aws:1:gone", ok=False)
    assert describe_error(result.exception) == "cluster aws:1:gone is not in the registry"


def test_without_a_deployment_the_registry_is_shown_with_a_warning(clm, monkeypatch):  # noqa: F811
    run, _ = clm
    result = run("-o", "json", "status")
    assert "warning: running executions not shown: stack Clm not found (endpoint " in result.stderr
    assert "is CLM deployed? deploy CLM there: `clm sandbox deploy`" in " ".join(result.stderr.split())
    assert [row["running_execution"] for row in json.loads(result.stdout)] == [None, None]
    monkeypatch.setenv("CLM_STACK", "Clm-test")
    assert "stack Clm-test not found" in run("status").stderr


def test_another_stack_by_option_or_environment(clm, aws, monkeypatch):  # noqa: F811
    run, _ = clm
    arn = deploy_clm_stack(aws, WAITING, stack="Clm-blue")
    aws.client("stepfunctions").start_execution(stateMachineArn=arn, input=json.dumps({"cluster_id": KUBE_1}))
    by_option = json.loads(run("-o", "json", "status", KUBE_1, "--stack", "Clm-blue").stdout)
    monkeypatch.setenv("CLM_STACK", "Clm-blue")
    by_environment = json.loads(run("-o", "json", "status", KUBE_1).stdout)
    assert by_option == by_environment
    assert by_option[0]["running_execution"] is not None
