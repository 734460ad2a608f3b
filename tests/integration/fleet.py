"""A fleet of six clusters on the sandbox for rollout tests (tests/integration/test_fleet_*.py): registered under a
rollout policy, their runs and versions read back, the configuration changed, events captured."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from click.testing import CliRunner

from clm.cli.main import cli
from clm.model import Cluster, ClusterStatus
from clm.registry.clusters_yaml import load_clusters
from clm.rollout.progress import config_version_of
from clm_sandbox.controlplane import ControlPlane
from tests.endpoints import store_kube_secret
from tests.integration.deployment import ROOT, Deployment, upload_rollout_policy

PROBE_KEY = "config/cluster/manifests/rollout-probe/probe.yaml"


def probe(name: str, value: str) -> bytes:
    """A ConfigMap of the example's namespace: a name Kubernetes refuses (upper case) fails the apply."""
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: example\ndata:\n  v: '{value}'\n"


def register_fleet(deployment: Deployment, control_plane: ControlPlane, policy: str) -> list[Cluster]:
    """Six clusters sharing the session's control plane (each through its own secret), each with a node pool of no
    node (a rollout is about configuration versions, and one API server cannot hold six clusters' nodes: each node
    simulator keeps only its own cluster's): t0-t2 in `test` (criticality 0-2), p0-p2 in `production` (3-5); the
    `policy` uploaded before they are registered; all provisioned."""
    base = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    pool = dataclasses.replace(base.node_pools[0], min_size=0, max_size=1)
    upload_rollout_policy(deployment, policy)
    clusters = []
    names = [(f"t{i}", "test") for i in range(3)] + [(f"p{i}", "production") for i in range(3)]
    for index, (name, environment) in enumerate(names):
        cluster_id = f"aws:123456789012:eu-central-1:{name}"
        secret = f"clm/{name}"
        store_kube_secret(deployment.session, secret, control_plane.kubeconfig_path.read_text(), cluster_id)
        clusters.append(dataclasses.replace(
            base, id=cluster_id, local_id=name, alias=name, environment=environment, criticality_level=index,
            config_items={**base.config_items, "kube_auth_secret": secret, "app_replicas": "1"},
            node_pools=[pool], status=ClusterStatus(),
        ))  # fmt: skip
    for cluster in clusters:
        deployment.registry.put(cluster)
    runs = deployment.settle(0)
    assert all(run["status"] == "SUCCEEDED" for run in runs), [(r["name"], r.get("cause")) for r in runs]
    return clusters


def working_runs(deployment: Deployment, known: int) -> dict[str, dict[str, Any]]:
    """The runs after the first `known` that did not skip, by cluster local id (one each)."""
    runs = {}
    for run in deployment.settle(known):
        plan = json.loads(run.get("output") or "{}").get("plan") or {}
        if plan.get("action") == "skip":
            continue
        local_id = json.loads(run["input"])["cluster_id"].rsplit(":", 1)[-1]
        assert local_id not in runs, f"two working runs of {local_id}"
        runs[local_id] = run
    return runs


def config_versions(deployment: Deployment, clusters: list[Cluster]) -> dict[str, str | None]:
    return {c.local_id: config_version_of(deployment.registry.get(c.id).status.current_version) for c in clusters}


def rollout_cli(deployment: Deployment, *arguments: str) -> Any:
    table = deployment.outputs["RegistryTableName"]
    result = CliRunner().invoke(cli, ["--table", table, *arguments], catch_exceptions=True)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def upload_probe(deployment: Deployment, name: str, value: str) -> None:
    s3 = deployment.session.client("s3")
    s3.put_object(Bucket=deployment.outputs["ConfigBucketName"], Key=PROBE_KEY, Body=probe(name, value))


def capture_rollout_events(deployment: Deployment) -> str:
    """A rule on CLM's bus sending every `clm.rollout` event to a new SQS queue (as a team's alerting would take
    them); returns the queue's URL."""
    sqs, events = deployment.session.client("sqs"), deployment.session.client("events")
    url = sqs.create_queue(QueueName="rollout-events")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    bus = deployment.outputs["EventBusName"]
    events.put_rule(Name="rollouts", EventBusName=bus, EventPattern=json.dumps({"source": ["clm.rollout"]}))
    events.put_targets(Rule="rollouts", EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn}])
    return url


def received(deployment: Deployment, url: str) -> list[dict[str, Any]]:
    """Every event the queue holds (taken off it)."""
    sqs, found = deployment.session.client("sqs"), []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        found += [json.loads(message["Body"]) for message in messages]
        for message in messages:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return found
