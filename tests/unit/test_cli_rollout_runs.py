"""Each rollout cluster's runs, from the provision state machine's executions (in-process moto; executions are not
run): reconcile's runs told by their name's hash (before and after a resume), others by their input up to a bound;
`clm rollout status -o json` carries them and `--html` draws them."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from clm.cli import rollout_runs as module
from clm.cli.executions import start_provision
from clm.cli.rollout_runs import Rollout, rollout_runs
from clm.config.local import LocalSource
from clm.registry.rollouts import RolloutStore
from clm.rollout.state import RolloutState
from clm.timestamps import utc_now
from clm.version import desired_version
from clm.workflow.reconcile import execution_name
from clm.workflow.rollout_gate import resumed_version
from tests.unit.test_cli import EXAMPLES
from tests.unit.test_cli_helpers import KUBE_1, KUBE_2, TABLE, clm, deploy_clm_stack  # noqa: F401  (the fixture)

PASS = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}


@pytest.fixture
def fleet(aws: boto3.Session, clm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:  # noqa: F811
    """The example clusters at an older configuration, a configuration folder (its version), the CLM stack."""
    monkeypatch.delenv("CLM_CONFIG_SOURCE", raising=False)
    invoke, registry = clm
    for cluster_id in (KUBE_1, KUBE_2):
        registry.record_success(cluster_id, "older-config#h")
    shutil.copytree(EXAMPLES / "config", tmp_path / "config")
    config = tmp_path / "config"
    return {
        "invoke": invoke,
        "clusters": [registry.get(KUBE_1), registry.get(KUBE_2)],
        "config": config,
        "version": LocalSource(config).version(),
        "machine": deploy_clm_stack(aws, PASS),
        "sfn": aws.client("stepfunctions"),
        "store": RolloutStore(aws.client("dynamodb"), TABLE),
    }


def start(fleet: dict[str, Any], index: int, version: str, resumes: int = 0) -> str:
    """Start a run as reconcile names it (after `resumes` resumes); its ARN."""
    cluster = fleet["clusters"][index]
    desired = str(desired_version(cluster, version))
    desired = resumed_version(desired, resumes) if resumes else desired
    name = execution_name(cluster, desired, utc_now().timestamp())
    document = json.dumps({"cluster_id": cluster.id, "reason": "outdated"})
    return fleet["sfn"].start_execution(stateMachineArn=fleet["machine"], name=name, input=document)["executionArn"]


def counted(sfn: Any) -> list[str]:
    """The names of the API calls `sfn` makes from now on."""
    calls: list[str] = []
    sfn.meta.events.register("before-call.*", lambda model, **_: calls.append(model.name))
    return calls


def test_runs_are_told_by_name_without_a_call_and_by_input_up_to_the_bound(fleet, monkeypatch) -> None:
    sfn, machine, version = fleet["sfn"], fleet["machine"], fleet["version"]
    failed = start(fleet, 0, version)
    sfn.stop_execution(executionArn=failed, error="States.Aborted")
    resumed = start(fleet, 1, version, resumes=1)
    start(fleet, 0, "another-config")  # reconcile's run of a version no rollout looked at concerns
    by_hand = start_provision(sfn, machine, KUBE_2, "clm provision")
    start_provision(sfn, machine, "aws:123456789012:eu-central-1:elsewhere", "clm provision")
    rollout = Rollout(version, utc_now() - timedelta(minutes=1), 1, tuple(fleet["clusters"]))
    calls = counted(sfn)
    found = rollout_runs(sfn, machine, [rollout])
    assert {cluster: [(r.execution, r.status) for r in runs] for cluster, runs in found.by_cluster.items()} == {
        KUBE_1: [(failed.rsplit(":", 1)[1], "ABORTED")],
        KUBE_2: [(resumed.rsplit(":", 1)[1], "RUNNING"), (by_hand.rsplit(":", 1)[1], "RUNNING")],
    }
    assert sorted(calls) == ["DescribeExecution", "DescribeExecution", "ListExecutions"]
    assert (found.calls, found.described, found.not_described) == (3, 2, 0)
    assert found.by_cluster[KUBE_1][0].stopped_at is not None and found.by_cluster[KUBE_2][0].stopped_at is None
    monkeypatch.setattr(module, "MAX_DESCRIBED", 1)
    bounded = rollout_runs(sfn, machine, [rollout])
    assert (bounded.calls, bounded.described, bounded.not_described) == (2, 1, 1)


def test_status_json_carries_the_runs_and_html_draws_them(fleet, tmp_path) -> None:
    invoke, config, version = fleet["invoke"], str(fleet["config"]), fleet["version"]
    fleet["store"].start(RolloutState(version, utc_now() - timedelta(minutes=1)))
    run = start(fleet, 0, version).rsplit(":", 1)[1]
    shown = json.loads(invoke("-o", "json", "rollout", "status", "--config", config).stdout)
    [rollout] = shown["rollouts"]
    clusters = {c["id"]: c for wave in rollout["wave_progress"] for c in wave["clusters"]}
    assert [(r["execution"], r["status"]) for r in clusters[KUBE_1]["runs"]] == [(run, "RUNNING")]
    assert clusters[KUBE_2]["runs"] == [] and shown["runs_read"] == {"calls": 1, "described": 0, "not_described": 0}
    picture = tmp_path / "rollout.html"
    drawn = invoke("rollout", "status", "--config", config, "--html", str(picture))
    assert f"rollout picture: {picture}" in drawn.output and "rollout of" in drawn.stdout
    page = picture.read_text()
    assert f">{KUBE_1}</text>" in page and f">{KUBE_2}</text>" in page and f"run {run} from" in page


def test_without_a_deployment_the_runs_are_not_read_and_the_picture_says_so(fleet, tmp_path, aws) -> None:
    aws.client("cloudformation").delete_stack(StackName="Clm")
    shown = json.loads(fleet["invoke"]("-o", "json", "rollout", "status", "--config", str(fleet["config"])).stdout)
    assert shown["runs_error"].startswith("runs not read: stack Clm not found")
    picture = tmp_path / "rollout.html"
    fleet["invoke"]("rollout", "status", "--config", str(fleet["config"]), "--html", str(picture))
    assert "runs not read: stack Clm not found" in picture.read_text()
