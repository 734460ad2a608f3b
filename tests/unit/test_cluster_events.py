"""The cluster update events (clm.workflow.cluster_events): their details as docs/events.md documents them, bounded
and without config items; put on CLM's bus, and a refusal that never fails the run. Through the `run` handler on
in-process moto: begin (not a skip), succeed and fail publish them, as a rule on the bus delivers them to SQS."""

from __future__ import annotations

import json
import logging
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from clm.model import PROBLEM_TYPES, Cluster, ClusterStatus, Problem
from clm.registry.dynamodb import DynamoRegistry
from clm.workflow import cluster_events
from clm.workflow.cluster_events import FAILED, SOURCE, STARTED, SUCCEEDED, ClusterEvent, publish
from clm.workflow.run import DECOMMISSION, PROVISION, RunPlan
from tests.unit.test_lambda_run import call, deployment  # noqa: F401 - the fixture

EXECUTION = "arn:aws:states:eu-central-1:123456789012:execution:clm-provision:run-1"
CLUSTER_ID = "aws:123456789012:eu-central-1:kube-1"
WHERE = {"account": "123456789012", "region": "eu-central-1"}
SECRET = "s3cr3t-never-in-an-event"
FIELDS = {
    "cluster_id", "alias", "environment", "account", "region", "action", "execution", "version_from", "version_to",
    "at",
}  # fmt: skip


def cluster(**changes: Any) -> Cluster:
    fields: dict[str, Any] = {
        "id": CLUSTER_ID,
        "local_id": "kube-1",
        "infrastructure_account": "aws:123456789012",
        "region": "eu-central-1",
        "provider": "zalando-aws",
        "alias": "kube-1",
        "environment": "test",
        "config_items": {"api_token": SECRET, "db_password": f"aws:kms:{SECRET}"},
        "status": ClusterStatus(current_version="c0#s0"),
    }
    return Cluster(**{**fields, **changes})


def plan(action: str = PROVISION, desired: str = "c1#s1") -> RunPlan:
    return RunPlan(CLUSTER_ID, action, "c0#s0 -> c1#s1", desired, dict(WHERE))


def test_started_names_the_cluster_where_it_is_the_run_and_both_versions() -> None:
    event = cluster_events.started(cluster(), plan(), EXECUTION)
    assert event.detail_type == STARTED and set(event.detail) == FIELDS
    assert {key: value for key, value in event.detail.items() if key != "at"} == {
        "cluster_id": CLUSTER_ID,
        "alias": "kube-1",
        "environment": "test",
        "account": "123456789012",
        "region": "eu-central-1",
        "action": "provision",
        "execution": EXECUTION,
        "version_from": "c0#s0",
        "version_to": "c1#s1",
    }
    assert event.detail["at"].endswith("Z")


def test_succeeded_carries_the_version_recorded_and_a_decommission_no_version_to() -> None:
    event = cluster_events.succeeded(cluster(), plan(), EXECUTION, "c1#s1")
    assert event.detail_type == SUCCEEDED and set(event.detail) == FIELDS
    assert (event.detail["version_from"], event.detail["version_to"]) == ("c0#s0", "c1#s1")
    for gone in (
        cluster_events.started(cluster(), plan(DECOMMISSION), EXECUTION),  # begin computed a desired version
        cluster_events.succeeded(cluster(), plan(DECOMMISSION), EXECUTION, "c1#s1"),
    ):
        assert (gone.detail["action"], gone.detail["version_from"], gone.detail["version_to"]) == (
            "decommission", "c0#s0", "",
        )  # fmt: skip


def test_failed_carries_the_problem_type_and_title_and_without_a_plan_the_registrys_place() -> None:
    problem = Problem(title="step Apply: ApplyFailed: bad manifest", type=PROBLEM_TYPES + "ApplyFailed")
    event = cluster_events.failed(cluster(), plan(), EXECUTION, problem)
    assert event.detail_type == FAILED and set(event.detail) == FIELDS | {"problem"}
    assert event.detail["problem"] == {"type": PROBLEM_TYPES + "ApplyFailed", "title": problem.title}
    assert (event.detail["version_from"], event.detail["version_to"]) == ("c0#s0", "c1#s1")
    bare = cluster_events.failed(cluster(region="eu-west-1"), None, EXECUTION, problem)
    assert (bare.detail["account"], bare.detail["region"], bare.detail["action"]) == ("123456789012", "eu-west-1", "")


def test_a_failed_health_gate_is_its_own_event_after_the_update_failed() -> None:
    title = "health gate: kube-1 was not healthy for 180 s within 26 checks 30 s apart: alarm kube-1-slo in ALARM: x"
    gate = Problem(title=title, type=PROBLEM_TYPES + "HealthGateFailed")
    update, failed_gate = cluster_events.failures(cluster(), plan(), EXECUTION, gate)
    assert (update.detail_type, failed_gate.detail_type) == (FAILED, cluster_events.GATE_FAILED)
    assert failed_gate.detail["problem"] == {"type": PROBLEM_TYPES + "HealthGateFailed", "title": title}
    other = Problem(title="step Apply: bad manifest", type=PROBLEM_TYPES + "ApplyFailed")
    assert [e.detail_type for e in cluster_events.failures(cluster(), plan(), EXECUTION, other)] == [FAILED]


def test_what_a_registry_writer_or_an_error_chooses_is_bounded_and_no_config_item_is_in_an_event() -> None:
    long = cluster(alias="a" * 100_000, environment="e" * 10_000, status=ClusterStatus(current_version="v" * 5_000))
    problem = Problem(title=f"StackFailed: {'x' * 300_000}", type=PROBLEM_TYPES + "E" * 1_000)
    events = [
        cluster_events.started(long, plan(desired="w" * 5_000), EXECUTION),
        cluster_events.succeeded(long, plan(), EXECUTION, "w" * 5_000),
        cluster_events.failed(long, plan(), EXECUTION + "x" * 5_000, problem),
    ]
    for event in events:
        text = json.dumps(event.detail)
        assert len(text.encode()) < 4_096, event.detail_type  # EventBridge takes 256 KB; a pager's message far less
        assert SECRET not in text and "config_items" not in text and "api_token" not in text
        assert event.detail["alias"] == "a" * 255 + "…"
    assert len(events[2].detail["problem"]["title"]) == 500


class Refusing:
    """An EventBridge client that refuses the first `refusals` entries put, then takes them."""

    def __init__(self, refusals: int):
        self.refusals, self.calls = refusals, 0

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: N803 (boto3's name)
        self.calls += 1
        if self.calls <= self.refusals:
            return {"FailedEntryCount": 1, "Entries": [{"ErrorCode": "InternalFailure", "ErrorMessage": "try later"}]}
        return {"FailedEntryCount": 0, "Entries": [{"EventId": "1"}]}


class Broken:
    """An EventBridge client whose calls fail (a bus deleted, a permission taken away)."""

    calls = 0

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: N803 (boto3's name)
        self.calls += 1
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "PutEvents")


def test_a_refused_event_is_put_once_more_then_logged_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    event = cluster_events.started(cluster(), plan(), EXECUTION)
    once = Refusing(1)
    assert publish(event, lambda: once, "clm") is True and once.calls == 2
    always, broken = Refusing(99), Broken()
    with caplog.at_level(logging.WARNING, logger="clm.workflow.cluster_events"):
        assert publish(event, lambda: always, "clm") is False and always.calls == 2
        assert publish(event, lambda: broken, "clm") is False and broken.calls == 2
    assert [r.getMessage() for r in caplog.records] == [
        f"event bus clm: Cluster Update Started of {CLUSTER_ID} not published: InternalFailure: try later",
        f"event bus clm: Cluster Update Started of {CLUSTER_ID} not published: An error occurred "
        "(AccessDeniedException) when calling the PutEvents operation: no",
    ]
    never = Broken()
    assert publish(ClusterEvent(STARTED, {}), lambda: never, "") is True and never.calls == 0  # no bus: nothing


# --- through the run handler, on in-process moto --------------------------------------------------------------------


@pytest.fixture
def queue(
    aws: boto3.Session,
    deployment: DynamoRegistry,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    """The run function's deployment (tests/unit/test_lambda_run.py) and CLM's bus with a rule sending every
    `clm.cluster` event to an SQS queue; returns the queue's URL."""
    sqs, events = aws.client("sqs"), aws.client("events")
    url = sqs.create_queue(QueueName="cluster-events")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.create_event_bus(Name="clm")
    events.put_rule(Name="clusters", EventBusName="clm", EventPattern=json.dumps({"source": [SOURCE]}))
    events.put_targets(Rule="clusters", EventBusName="clm", Targets=[{"Id": "queue", "Arn": arn}])
    monkeypatch.setenv("CLM_EVENT_BUS", "clm")
    return url


def received(aws: boto3.Session, url: str) -> list[dict[str, Any]]:
    sqs, found = aws.client("sqs"), []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            found.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return found


def test_the_run_publishes_started_succeeded_and_failed_but_nothing_for_a_skip(aws: boto3.Session, queue: str) -> None:
    first = call("begin", cluster_id=CLUSTER_ID)
    rendered = call("render", cluster_id=CLUSTER_ID)
    call("succeed", cluster_id=CLUSTER_ID, plan=first, version=rendered["version"])
    again = call("begin", cluster_id=CLUSTER_ID, execution=EXECUTION + "-2")  # ready is a spec change (as in CLM)
    error = {"Error": "StackFailed", "Cause": json.dumps({"errorMessage": "stack kube-1: VPC failed"})}
    call("fail", cluster_id=CLUSTER_ID, execution=EXECUTION + "-2", plan=again, error=error)
    third = call("begin", cluster_id=CLUSTER_ID, execution=EXECUTION + "-3")  # failed: the next run goes again
    version = call("render", cluster_id=CLUSTER_ID)["version"]
    call("succeed", cluster_id=CLUSTER_ID, execution=EXECUTION + "-3", plan=third, version=version)
    assert call("begin", cluster_id=CLUSTER_ID, execution=EXECUTION + "-4")["action"] == "skip"

    events = received(aws, queue)
    assert [(e["detail-type"], e["detail"]["execution"][-2:]) for e in events] == [
        (STARTED, "-1"), (SUCCEEDED, "-1"), (STARTED, "-2"), (FAILED, "-2"), (STARTED, "-3"), (SUCCEEDED, "-3"),
    ]  # fmt: skip
    assert all(e["source"] == SOURCE and set(e["detail"]) >= FIELDS for e in events)
    started, succeeded, _, failure, *_ = (e["detail"] for e in events)
    assert (started["version_from"], started["version_to"], started["action"]) == ("", rendered["version"], "provision")
    assert succeeded["version_to"] == rendered["version"] and succeeded["environment"] == "test"
    assert failure["problem"] == {
        "type": PROBLEM_TYPES + "StackFailed",
        "title": "StackFailed: stack kube-1: VPC failed",
    }
    assert (failure["version_from"], failure["account"], failure["region"]) == (rendered["version"], *WHERE.values())


def test_a_bus_that_refuses_fails_no_step(aws: boto3.Session, queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLM_EVENT_BUS", "no-such-bus")
    monkeypatch.setattr(cluster_events, "client", lambda service: Broken())
    first = call("begin", cluster_id=CLUSTER_ID)
    rendered = call("render", cluster_id=CLUSTER_ID)
    assert call("succeed", cluster_id=CLUSTER_ID, plan=first, version=rendered["version"])["action"] == "provision"
    registry = DynamoRegistry(aws.client("dynamodb"), "registry")
    assert registry.get(CLUSTER_ID).status.current_version == rendered["version"]
    assert registry.lock_holder(CLUSTER_ID) is None
    assert received(aws, queue) == []
