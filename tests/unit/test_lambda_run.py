"""The `run` Lambda handler called directly on in-process moto: begin, render, succeed, fail."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.workflow.lambda_handler import TransientError, UnknownStep
from clm.workflow.settings import SettingsError
from tests.lambdas import FakeContext, load_handler_module

EXAMPLES = Path(__file__).parents[2] / "examples"
EXECUTION = "arn:aws:states:eu-central-1:123456789012:execution:provision:run-1"


@pytest.fixture
def deployment(aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> DynamoRegistry:
    """Registry, config (local folder) and artefact bucket as the CDK app wires them."""
    dynamodb = aws.client("dynamodb")
    create_table(dynamodb, "registry")
    registry = DynamoRegistry(dynamodb, "registry")
    for cluster in load_clusters((EXAMPLES / "clusters.yaml").read_text()):
        registry.put(cluster)
    aws.client("s3").create_bucket(Bucket="artefacts", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    monkeypatch.setenv("CLM_REGISTRY_TABLE", "registry")
    monkeypatch.setenv("CLM_CONFIG_SOURCE", str(EXAMPLES / "config"))
    monkeypatch.setenv("CLM_ARTEFACT_BUCKET", "artefacts")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "CLM")
    from clm.aws import forget_clients

    forget_clients()  # clients bound to this test's moto
    return registry


def call(step: str, **event: Any) -> dict[str, Any]:
    handler = load_handler_module("run").handler
    return handler({"step": step, "execution": EXECUTION, **event}, FakeContext())


@pytest.fixture
def lambda_logs() -> Iterator[io.StringIO]:
    """What the handlers' powertools logger writes. Its stream handler lives as long as the process (bound to the
    stdout of whichever test created it first), so it is pointed at a buffer for this test."""
    load_handler_module("run")
    handlers = [h for h in logging.getLogger("clm").handlers if isinstance(h, logging.StreamHandler)]
    buffer = io.StringIO()
    previous = [h.setStream(buffer) for h in handlers]
    yield buffer
    for handler, stream in zip(handlers, previous, strict=True):
        handler.setStream(stream)


def test_begin_render_succeed(deployment: DynamoRegistry, lambda_logs: io.StringIO) -> None:
    cluster_id = deployment.list_clusters()[0].id
    plan = call("begin", cluster_id=cluster_id)
    assert plan["action"] == "provision"
    rendered = call("render", cluster_id=cluster_id)
    assert rendered["rendering"].startswith("renderings/")
    call("succeed", cluster_id=cluster_id, plan=plan, version=rendered["version"])
    cluster = deployment.get(cluster_id)
    assert (cluster.status.current_version, cluster.lifecycle_status) == (rendered["version"], "ready")
    again = call("begin", cluster_id=cluster_id)  # ready changes the spec: one more run follows, as in CLM
    assert again["action"] == "provision"
    rendered = call("render", cluster_id=cluster_id)
    call("succeed", cluster_id=cluster_id, plan=again, version=rendered["version"])
    assert call("begin", cluster_id=cluster_id)["action"] == "skip"
    logs = [json.loads(line) for line in lambda_logs.getvalue().splitlines() if line.startswith("{")]
    done = [line for line in logs if line.get("message") == "step done"]
    assert {line["step"] for line in done} >= {"begin", "render", "succeed"}
    assert all(line["cluster_id"] == cluster_id and line["execution"] == EXECUTION for line in done)


def test_fail_records_the_problem(deployment: DynamoRegistry) -> None:
    cluster_id = deployment.list_clusters()[0].id
    call("begin", cluster_id=cluster_id)
    error = {"Error": "StackFailed", "Cause": json.dumps({"errorMessage": "stack kube-1: VPC failed"})}
    assert call("fail", cluster_id=cluster_id, error=error)["problem"] == "StackFailed: stack kube-1: VPC failed"
    assert deployment.lock_holder(cluster_id) is None


def test_a_failed_run_keeps_its_lock_until_its_rollout_is_halted(deployment, monkeypatch) -> None:
    """A reconcile that finds the cluster free must find the rollout halted, or it starts the failed version again;
    a halt whose event is refused keeps the lock for the step's retry."""
    from clm.workflow import rollout_gate

    cluster_id = deployment.list_clusters()[0].id
    plan = call("begin", cluster_id=cluster_id)
    held = []

    def halting(*args: Any) -> None:
        held.append(deployment.lock_holder(cluster_id))
        raise rollout_gate.RolloutEventsRefused("event bus clm: rollout events refused")

    monkeypatch.setattr(rollout_gate, "halt_on_failure", halting)
    with pytest.raises(TransientError, match="rollout events refused"):
        call("fail", cluster_id=cluster_id, plan=plan, error={"Error": "ApplyError", "Cause": "bad manifest"})
    assert held == [EXECUTION] and deployment.lock_holder(cluster_id) == EXECUTION
    monkeypatch.setattr(rollout_gate, "halt_on_failure", lambda *args: held.append(deployment.lock_holder(cluster_id)))
    call("fail", cluster_id=cluster_id, plan=plan, error={"Error": "ApplyError", "Cause": "bad manifest"})
    assert held == [EXECUTION, EXECUTION] and deployment.lock_holder(cluster_id) is None


def test_unknown_step_and_missing_settings_are_clear_errors(deployment, monkeypatch) -> None:
    with pytest.raises(
        UnknownStep,
        match=r"function run has no step 'nope' \(serves: begin, check_targets, etcd_files, fail, health_gate, "
        r"node_pools, park, render, succeed\)",
    ):
        call("nope", cluster_id="x")
    monkeypatch.delenv("CLM_ARTEFACT_BUCKET")
    with pytest.raises(SettingsError, match="CLM_ARTEFACT_BUCKET"):
        call("render", cluster_id="x")


def test_only_a_run_started_by_a_change_wakes_the_parked_drains(deployment: DynamoRegistry, monkeypatch) -> None:
    from clm.workflow import run_steps

    cluster_id = deployment.list_clusters()[0].id
    call("begin", cluster_id=cluster_id)
    monkeypatch.setattr(run_steps, "execution_running", lambda holder: holder == EXECUTION)
    parking = {"seconds": 60, "since": "2020-01-01T00:00:00Z"}
    assert call("park", cluster_id=cluster_id, node="node-a", token="token-a", park=parking)["parked"] is True
    other = {"step": "begin", "cluster_id": cluster_id, "execution": EXECUTION.replace("run-1", "run-2")}
    handler = load_handler_module("run").handler
    scheduled = handler(
        {**other, "input": {"reason": "interrupted update"}}, FakeContext()
    )  # the schedule's re-trigger
    assert (
        scheduled["action"] == "skip"
        and deployment._client.get_item(TableName="registry", Key={"id": {"S": cluster_id}})["Item"]["parked"]["M"]
    ), "a scheduled run must leave the parked drain asleep"
    handler({**other, "input": {"reason": "manual: clm provision"}}, FakeContext())
    item = deployment._client.get_item(TableName="registry", Key={"id": {"S": cluster_id}})["Item"]
    assert "parked" not in item and "woken_at" in item  # taken (moto knows no such task: nothing to send)


def test_a_change_made_during_a_run_is_followed_once_the_lock_is_free(deployment, monkeypatch) -> None:
    """A registry edit while the run holds the lock starts a run that skips; the successful run's end starts the
    edit's with a `Cluster Changed` event (as the registry trigger's), after releasing the lock, so that it does not
    skip too. No change, no event; a refused event fails nothing (reconcile brings the change)."""
    import dataclasses

    from clm.workflow import registry_events

    monkeypatch.setenv("CLM_EVENT_BUS", "clm")
    published = []

    def publish(client: Any, bus: str, changes: list[Any]) -> int:
        published.append((bus, changes, deployment.lock_holder(changes[0].cluster_id)))
        return len(changes)

    monkeypatch.setattr(registry_events, "publish", publish)
    [cluster, other, *_] = deployment.list_clusters()
    plan = call("begin", cluster_id=cluster.id)
    version = call("render", cluster_id=cluster.id)["version"]
    deployment.put(dataclasses.replace(cluster, config_items={**cluster.config_items, "app_replicas": "5"}))
    assert call("succeed", cluster_id=cluster.id, plan=plan, version=version)["followed_change"] is True
    [(bus, [change], holder)] = published
    assert (bus, change.cluster_id, holder) == ("clm", cluster.id, None), published
    assert change.reason == "registry: spec changed during run run-1"

    plan = call("begin", cluster_id=other.id)
    version = call("render", cluster_id=other.id)["version"]
    assert "followed_change" not in call("succeed", cluster_id=other.id, plan=plan, version=version)
    assert len(published) == 1

    def refused(*_: Any) -> int:
        raise registry_events.PublishError("event bus clm: Cluster Changed not published")

    monkeypatch.setattr(registry_events, "publish", refused)
    other = deployment.get(other.id)
    deployment.put(dataclasses.replace(other, config_items={**other.config_items, "app_replicas": "6"}))
    plan = call("begin", cluster_id=other.id)
    version = call("render", cluster_id=other.id)["version"]
    deployment.put(dataclasses.replace(other, config_items={**other.config_items, "app_replicas": "7"}))
    assert call("succeed", cluster_id=other.id, plan=plan, version=version)["followed_change"] is False
    assert deployment.lock_holder(other.id) is None


def test_a_failed_run_leaves_a_change_made_during_it_to_its_retry(deployment, monkeypatch) -> None:
    """A failed run's retry waits for the next 15-minute window (the reconcile's names), edited or not: following
    the edit at once would try the failure again at once (a window that is still closed, say)."""
    import dataclasses

    from clm.workflow import registry_events

    monkeypatch.setenv("CLM_EVENT_BUS", "clm")
    monkeypatch.setattr(registry_events, "publish", lambda *_: pytest.fail("a failed run followed a change"))
    cluster = deployment.list_clusters()[0]
    plan = call("begin", cluster_id=cluster.id)
    deployment.put(dataclasses.replace(cluster, config_items={**cluster.config_items, "app_replicas": "5"}))
    error = {"Error": "ApplyError", "Cause": "bad manifest"}
    assert "followed_change" not in call("fail", cluster_id=cluster.id, plan=plan, error=error)
    assert deployment.lock_holder(cluster.id) is None
