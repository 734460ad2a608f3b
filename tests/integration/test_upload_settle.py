"""A configuration upload of several files through the deployed reconcile: read whole once quiet for a few seconds,
not after a fixed 30 s (issue 30: time to first action); a push `clm config push` marked whole, at once. Each file's
Object Created event starts a reconcile; those whose file is no longer the newest end at once, the newest file's
reads the whole upload once nothing changed for QUIET_SECONDS.

Timing: the files are put 1 s apart, 4 s inside the 5 s quiet period (a put takes milliseconds on the sandbox);
the bound of 25 s from the last put to the read is 5 s of quiet plus two Lambda calls, with room for a loaded
machine, and below the 30 s the fixed wait took."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from clm.config.push import plan_push, push
from clm.config.pushed import MARKER
from clm.config.s3 import S3Source
from clm.registry.clusters_yaml import load_clusters
from tests.integration.deployment import ROOT, Deployment

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

FILES = ("a", "b", "c")


def blocked_cluster(deployment: Deployment) -> set[str]:
    """Put the example cluster with an update block (reconcile reads versions, starts no run); the reconcile
    executions known once everything settled."""
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    blocked = {**cluster.config_items, "cluster_update_block": "read versions only"}
    deployment.registry.put(dataclasses.replace(cluster, config_items=blocked))
    deployment.settle(known=0)
    return {e["executionArn"] for e in deployment.executions(deployment.outputs["ReconcileStateMachineArn"])}


def test_a_multi_file_upload_is_read_whole_once_quiet(deployment: Deployment) -> None:
    known = blocked_cluster(deployment)
    machine = deployment.outputs["ReconcileStateMachineArn"]
    s3, bucket = deployment.session.client("s3"), deployment.outputs["ConfigBucketName"]

    for name in FILES:
        s3.put_object(Bucket=bucket, Key=f"config/cluster/manifests/extra/{name}.yaml", Body=b"# nothing\n")
        last_put = time.time()
        time.sleep(1)
    deployment.settle()

    reconciles = [e for e in deployment.executions(machine) if e["executionArn"] not in known]
    assert len(reconciles) == len(FILES) and all(e["status"] == "SUCCEEDED" for e in reconciles)
    read = [e for e in reconciles if "Reconcile" in deployment.states(e["executionArn"])]
    assert len(read) == 1, [deployment.states(e["executionArn"]) for e in reconciles]
    output = json.loads(deployment.sfn.describe_execution(executionArn=read[0]["executionArn"])["output"])
    assert output["config_versions"] == [S3Source(s3, bucket, "config/").version()]  # the whole upload
    history = deployment.sfn.get_execution_history(executionArn=read[0]["executionArn"])["events"]
    entered = next(e for e in history if e.get("stateEnteredEventDetails", {}).get("name") == "Reconcile")
    assert entered["timestamp"].timestamp() - last_put < 25


def test_a_marked_push_is_read_whole_at_once_by_the_markers_reconcile_alone(deployment: Deployment) -> None:
    """The marker's reconcile reads at its first look (SettleUpload once, no Wait); the files' reconciles end
    without reading. Structural, not timed: what is asserted is that no reconcile waited for quiet."""
    known = blocked_cluster(deployment)
    machine = deployment.outputs["ReconcileStateMachineArn"]
    s3, bucket = deployment.session.client("s3"), deployment.outputs["ConfigBucketName"]
    source = S3Source(s3, bucket, "config/")
    files = {f"cluster/manifests/extra/{name}.yaml": f"# pushed {name}\n".encode() for name in FILES}
    push(source, files, plan_push(source, files, delete=False))
    deadline = time.monotonic() + 60
    while len(new := [e for e in deployment.executions(machine) if e["executionArn"] not in known]) <= len(FILES):
        assert time.monotonic() < deadline, f"{len(new)} reconciles started by the push's {len(FILES) + 1} objects"
        time.sleep(0.5)
    deployment.settle()

    reconciles = {e["executionArn"]: e for e in deployment.executions(machine) if e["executionArn"] not in known}
    assert len(reconciles) == len(FILES) + 1 and all(e["status"] == "SUCCEEDED" for e in reconciles.values())
    states = {arn: deployment.states(arn) for arn in reconciles}
    [read] = [arn for arn, entered in states.items() if "Reconcile" in entered]
    started_by = json.loads(deployment.sfn.describe_execution(executionArn=read)["input"])["change"]["key"]
    assert started_by == f"config/{MARKER}"
    assert "WaitForUploadToSettle" not in states[read] and states[read].count("SettleUpload") == 1, states[read]
    output = json.loads(deployment.sfn.describe_execution(executionArn=read)["output"])
    assert output["config_versions"] == [source.version()]  # the whole push, its marker included
