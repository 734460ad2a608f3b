"""No secret leaks: a provision run on the sandbox reaches the cluster with a bearer token from Secrets Manager, and
neither the token, the CA's private key nor the secret's value shows up anywhere CLM writes: execution histories
(inputs, outputs, task parameters and results of every state machine), the Lambda handlers' log lines, CloudWatch
Logs, the registry and the buckets. Payloads between states carry keys (renderings/<hash>.json), never manifests."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import logging
import re
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client as k8s

from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.controlplane import ControlPlane
from clm_sandbox.nodesim import NodeSimulator
from tests.endpoints import store_kube_secret
from tests.integration.deployment import ROOT, Deployment, register_example_cluster

pytestmark = [
    pytest.mark.integration,
    # moto's CloudFormation skips AWS::S3::BucketPolicy and AWS::CloudWatch::Alarm (nothing tested here needs them)
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),
]

MAX_PAYLOAD_BYTES = 8 * 1024
RENDERING_KEY = re.compile(r"renderings/[0-9a-f]{24}\.json")
# What a manifest or a template would bring into a payload, as YAML or as JSON.
MANIFEST_MARKERS = ("apiVersion:", "metadata:", '"metadata"', "Resources:", '"Resources"', "AWSTemplateFormatVersion")
PAYLOAD_FIELDS = ("input", "output", "parameters")


def secret_forms(control_plane: ControlPlane, token: str, secret_value: str) -> dict[str, str]:
    """Every secret and the forms it could take in a log or a payload: as is, JSON-escaped, base64."""
    assert control_plane.tmpdir is not None
    ca_key = (control_plane.tmpdir / "ca.key").read_text()
    key_lines = [line for line in ca_key.splitlines() if line and not line.startswith("-----")]
    forms = {f"CA key line {i}": line for i, line in enumerate(key_lines) if len(line) >= 32}
    for name, value in {"token": token, "admin token": control_plane.token, "secret value": secret_value}.items():
        forms[name] = value
        forms[f"{name}, JSON-escaped"] = json.dumps(value)[1:-1]
        forms[f"{name}, base64"] = base64.b64encode(value.encode()).decode()
    return forms


def assert_no_secret(where: str, text: str, forms: dict[str, str]) -> None:
    leaked = [name for name, form in forms.items() if form in text]
    assert not leaked, f"{where} holds {', '.join(leaked)}"


@dataclass
class HandlerOutput:
    """The handlers' log lines (logger "clm") and everything else they print (stdout, stderr)."""

    log: io.StringIO
    printed: pytest.CaptureFixture[str]


@pytest.fixture
def handler_output(capfd: pytest.CaptureFixture[str]) -> Iterator[HandlerOutput]:
    """What the in-process Lambda handlers write, as Lambda sends it to CloudWatch Logs. The log lines go to a buffer
    of their own: the handlers of concurrent executions print to the one stdout from many threads, which can lose
    lines. The logger "clm" is configured once per process, with the stdout of the test phase that made it first,
    closed since; it is given a stream that stays open afterwards."""
    from aws_lambda_powertools import Logger

    Logger(service="clm")  # what every handler module does first; configures the process's logger "clm" once
    handlers = [h for h in logging.getLogger("clm").handlers if isinstance(h, logging.StreamHandler)]
    log = io.StringIO()
    for handler in handlers:
        handler.stream = log  # not setStream(): it would flush the closed stream
    yield HandlerOutput(log, capfd)
    for handler in handlers:
        handler.stream = sys.__stdout__


def histories(deployment: Deployment) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """(state machine name, described execution, history events) of every execution of every state machine."""
    sfn = deployment.sfn
    found = []
    for machine in sfn.list_state_machines()["stateMachines"]:
        for execution in deployment.executions(machine["stateMachineArn"]):
            arn = execution["executionArn"]
            pages = sfn.get_paginator("get_execution_history").paginate(executionArn=arn)
            events = [event for page in pages for event in page["events"]]
            found.append((machine["name"], sfn.describe_execution(executionArn=arn), events))
    return found


def payloads(described: dict[str, Any], events: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """(where, text) of the execution's input and output and of every input, output and parameters in its history."""
    for field in ("input", "output"):
        if described.get(field) is not None:
            yield f"execution {field}", described[field]
    for event in events:
        for name, details in event.items():
            if name.endswith("EventDetails"):
                for field in PAYLOAD_FIELDS:
                    if isinstance(details.get(field), str):
                        yield f"event {event['id']} ({event['type']}) {field}", details[field]


def log_events(session: Any) -> list[str]:
    """Every log event in moto's CloudWatch Logs."""
    logs = session.client("logs")
    groups = [
        g["logGroupName"] for page in logs.get_paginator("describe_log_groups").paginate() for g in page["logGroups"]
    ]
    return [
        event["message"]
        for group in groups
        for page in logs.get_paginator("filter_log_events").paginate(logGroupName=group)
        for event in page["events"]
    ]


def bucket_objects(s3: Any, bucket: str) -> dict[str, bytes]:
    """Every version of every object in the bucket, by key and version."""
    found = {}
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for version in page.get("Versions", []):
            body = s3.get_object(Bucket=bucket, Key=version["Key"], VersionId=version["VersionId"])["Body"].read()
            found[f"{version['Key']}@{version['VersionId']}"] = body
    return found


def assert_payloads_carry_keys_not_secrets(deployment: Deployment, forms: dict[str, str]) -> set[str]:
    """Every payload of every execution is small and holds no secret and no manifest; returns the rendering keys
    the payloads pass on."""
    executions = histories(deployment)
    assert {machine for machine, _, _ in executions} >= {"clm-provision", "clm-reconcile"}
    rendering_keys = set()
    for machine, described, events in executions:
        for where, text in payloads(described, events):
            place = f"{machine} {described['name']}: {where}"
            assert_no_secret(place, text, forms)
            assert len(text.encode()) <= MAX_PAYLOAD_BYTES, f"{place}: {len(text.encode())} bytes"
            assert not [m for m in MANIFEST_MARKERS if m in text], f"{place} carries a manifest or template: {text}"
            rendering_keys |= set(RENDERING_KEY.findall(text))
    assert rendering_keys  # renderings, passed on by key
    return rendering_keys


def assert_logs_hold_no_secret(output: HandlerOutput, session: Any, forms: dict[str, str]) -> list[dict[str, Any]]:
    """The handlers' log lines, what else they printed, and CloudWatch Logs hold no secret; returns the log lines.

    In-process handlers of concurrent executions share the logger's appended keys (step, function, cluster_id), so
    a line's keys may name another invocation; the message and its extras (result, error, reason) are its own."""
    log = output.log.getvalue()
    log_lines = [json.loads(line) for line in log.splitlines()]
    assert_no_secret("the handlers' log lines", log, forms)
    printed = output.printed.readouterr()
    assert_no_secret("the handlers' stdout", printed.out, forms)
    assert_no_secret("the handlers' stderr", printed.err, forms)
    assert_no_secret("CloudWatch Logs", "\n".join(log_events(session)), forms)
    return log_lines


def assert_stores_hold_no_secret(deployment: Deployment, forms: dict[str, str], rendering_keys: set[str]) -> None:
    """The registry's items and every object version of the artefact and config buckets hold no secret."""
    items = deployment.session.client("dynamodb").scan(TableName=deployment.outputs["RegistryTableName"])["Items"]
    assert [item["id"]["S"] for item in items] == [deployment.cluster_id]
    assert_no_secret("the registry", json.dumps(items), forms)
    s3 = deployment.session.client("s3")
    for bucket in (deployment.outputs["ArtefactBucketName"], deployment.outputs["ConfigBucketName"]):
        objects = bucket_objects(s3, bucket)
        for key, body in objects.items():
            assert_no_secret(f"s3://{bucket}/{key}", body.decode(errors="replace"), forms)
        if bucket == deployment.outputs["ArtefactBucketName"]:
            assert {key.split("@")[0] for key in objects} == rendering_keys


def test_a_provision_run_leaks_no_secret_and_passes_keys_not_manifests(
    deployment: Deployment,
    nodes: NodeSimulator,
    kube_api: k8s.ApiClient,
    control_plane: ControlPlane,
    handler_output: HandlerOutput,
) -> None:
    secret_value = deployment.session.client("secretsmanager").get_secret_value(SecretId="clm/kube-1")["SecretString"]
    assert control_plane.token in secret_value  # the kubeconfig holds the bearer token
    register_example_cluster(deployment)  # kube_auth_secret: clm/kube-1
    # Usually one run; a reconcile of the config upload that comes after it starts another (ready is a spec change).
    runs = deployment.settle(known=0)
    assert all(e["status"] == "SUCCEEDED" for e in runs), [(e["status"], e.get("error")) for e in runs]
    assert [d.metadata.name for d in k8s.AppsV1Api(kube_api).list_namespaced_deployment("example").items] == ["web"]
    forms = secret_forms(control_plane, control_plane.token, secret_value)

    rendering_keys = assert_payloads_carry_keys_not_secrets(deployment, forms)
    worked = [e for e in runs if json.loads(e["output"]).get("plan", {}).get("action") == "provision"]
    assert worked and all(RENDERING_KEY.search(e["output"]) for e in worked), [e["output"] for e in runs]
    log_lines = assert_logs_hold_no_secret(handler_output, deployment.session, forms)
    results = [line["result"] for line in log_lines if line["message"] == "step done"]
    assert any(RENDERING_KEY.fullmatch(str(result.get("rendering"))) for result in results)  # the render step's
    assert_stores_hold_no_secret(deployment, forms, rendering_keys)


def test_a_rejected_token_fails_the_run_without_leaking_it(
    deployment: Deployment, control_plane: ControlPlane, handler_output: HandlerOutput
) -> None:
    """The error path: a secret holding a token the API server refuses (401). The failure is recorded and named,
    and the token stays out of the error, the problem, the logs and the payloads."""
    token = secrets.token_hex(32)
    ca = base64.b64encode(control_plane.ca_path.read_bytes()).decode()
    secret_value = json.dumps({"server": control_plane.server, "token": token, "certificate-authority-data": ca})
    store_kube_secret(deployment.session, "clm/kube-1-token", secret_value, deployment.cluster_id)
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    items = {**cluster.config_items, "kube_auth_secret": "clm/kube-1-token"}
    deployment.registry.put(dataclasses.replace(cluster, api_server_url=control_plane.server, config_items=items))
    runs = deployment.settle(known=0)
    failed = [e for e in runs if e["status"] == "FAILED"]
    assert failed and {e["error"] for e in failed} == {"ClusterRunFailed"}, [
        (e["status"], e.get("error")) for e in runs
    ]
    problem = deployment.registry.get(deployment.cluster_id).status.problems[-1].title
    assert problem.startswith("KubeAuthError: ") and "refused the credentials (401 Unauthorized)" in problem, problem
    forms = secret_forms(control_plane, token, secret_value)

    rendering_keys = assert_payloads_carry_keys_not_secrets(deployment, forms)
    log_lines = assert_logs_hold_no_secret(handler_output, deployment.session, forms)
    refused = [line["reason"] for line in log_lines if line.get("error") == "KubeAuthError"]
    assert refused and all("401 Unauthorized" in reason for reason in refused), refused
    assert_stores_hold_no_secret(deployment, forms, rendering_keys)
