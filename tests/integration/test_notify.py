"""A team gets notified (issue 28, part 4), end to end on the sandbox with IAM enforced: the CDK app deployed with
`clm:notify=true` routes CLM's events through its SNS topic to a subscribed SQS queue. A cluster's first runs
publish their update events; a configuration whose manifest Kubernetes refuses fails the next run: its `Cluster
Update Failed` (the problem, the versions, where the cluster is) and its rollout's halt reach the queue, each with the
fields docs/events.md documents, and no config item; its decommission's start and end follow."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from clm.model import PROBLEM_TYPES
from clm.registry.clusters_yaml import load_clusters
from clm.rollout.progress import config_version_of
from clm_sandbox.deploy.synth import Assembly, synthesize
from tests.integration.deployment import ROOT, Deployment, the_run
from tests.integration.fleet import PROBE_KEY, probe

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

STARTED, SUCCEEDED, FAILED = "Cluster Update Started", "Cluster Update Succeeded", "Cluster Update Failed"
FIELDS = {"cluster_id", "alias", "environment", "account", "region", "action", "execution", "version_from",
          "version_to", "at"}  # fmt: skip


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """The CDK app synthesized with `clm:notify=true` (the deployment fixture deploys it)."""
    return synthesize(Path(tmp_path_factory.mktemp("cdk-notify")), "Clm", {"clm:notify": "true"})


def subscribe_queue(deployment: Deployment) -> str:
    """An SQS queue subscribed to the stack's notification topic (as a team's endpoint would be); its URL."""
    sqs = deployment.session.client("sqs")
    url = sqs.create_queue(QueueName="team")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    topic = deployment.outputs["NotifyTopicArn"]
    deployment.session.client("sns").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    return url


def notified(deployment: Deployment, url: str) -> list[dict[str, Any]]:
    """The events the queue received through the topic (taken off it), each counted once as docs/events.md tells a
    consumer to (delivery is at least once: a retried step publishes again), in the order received."""
    sqs, found = deployment.session.client("sqs"), {}
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            event = json.loads(json.loads(message["Body"])["Message"])  # SNS's envelope, then the event
            made = {key: value for key, value in event["detail"].items() if key != "at"}  # `at`: when it was made
            found.setdefault((event["detail-type"], json.dumps(made, sort_keys=True)), event)
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return list(found.values())


def test_a_teams_queue_hears_of_a_clusters_updates_and_of_a_failure_that_halts_its_rollout(
    deployment: Deployment,
) -> None:
    url = subscribe_queue(deployment)
    base = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    pool = dataclasses.replace(base.node_pools[0], min_size=0, max_size=1)  # a pool of no node: no simulator needed
    items = {**base.config_items, "kube_auth_secret": "clm/kube-1", "app_replicas": "1"}
    deployment.registry.put(dataclasses.replace(base, config_items=items, node_pools=[pool]))
    first = deployment.settle(0)
    assert [run["status"] for run in first] == ["SUCCEEDED"]
    events = notified(deployment, url)
    assert [(e["detail-type"], e["detail"]["execution"]) for e in events] == [
        (kind, run["executionArn"]) for run in first for kind in (STARTED, SUCCEEDED)
    ]
    assert all(e["source"] == "clm.cluster" and set(e["detail"]) == FIELDS for e in events)
    good = deployment.registry.get(base.id).status.current_version
    assert (events[0]["detail"]["version_from"], events[1]["detail"]["version_to"]) == ("", good)

    known = len(deployment.executions(deployment.provision))
    deployment.session.client("s3").put_object(
        Bucket=deployment.outputs["ConfigBucketName"], Key=PROBE_KEY, Body=probe("Bad_Probe", "1")
    )
    failed_run = the_run(deployment.settle(known), "FAILED")
    events = notified(deployment, url)
    kinds = {(e["source"], e["detail-type"]) for e in events}
    assert {("clm.cluster", STARTED), ("clm.cluster", FAILED), ("clm.rollout", "Rollout Halted")} <= kinds
    [failure] = [e["detail"] for e in events if e["detail-type"] == FAILED]
    assert set(failure) == FIELDS | {"problem"} and failure["execution"] == failed_run["executionArn"]
    assert (failure["cluster_id"], failure["alias"], failure["environment"]) == (base.id, "sandbox-dev", "test")
    assert (failure["account"], failure["region"], failure["action"]) == ("123456789012", "eu-central-1", "provision")
    assert failure["version_from"] == good and config_version_of(failure["version_to"]) != config_version_of(good)
    assert "Bad_Probe" in failure["problem"]["title"] and failure["problem"]["type"].startswith(PROBLEM_TYPES)
    [halt] = [e["detail"] for e in events if e["detail-type"] == "Rollout Halted"]
    assert halt["cluster_id"] == base.id and halt["execution"] == failed_run["executionArn"]
    assert not [e for e in events if "kube_auth_secret" in json.dumps(e) or "clm/kube-1" in json.dumps(e)]

    # A decommission is a cluster's update too (its own change: the halt does not hold it), with no version to.
    known = len(deployment.executions(deployment.provision))
    stored = deployment.registry.get(base.id)
    deployment.registry.put(dataclasses.replace(stored, lifecycle_status="decommission-requested"))
    the_run(deployment.settle(known))  # a decommission
    events = notified(deployment, url)
    assert [(e["detail-type"], e["detail"]["action"], e["detail"]["version_to"]) for e in events] == [
        (STARTED, "decommission", ""), (SUCCEEDED, "decommission", ""),
    ]  # fmt: skip
    assert {e["detail"]["version_from"] for e in events} == {good}
