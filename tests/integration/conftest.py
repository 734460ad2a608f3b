"""Integration fixtures: one real control plane per test session."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator

import boto3
import pytest
from kubernetes import client, config

from clm.kube.client import KubeClient
from clm.registry.dynamodb import DynamoRegistry
from clm_sandbox.controlplane import ControlPlane, ensure_built
from clm_sandbox.deploy import deploy_assembly
from clm_sandbox.deploy.synth import Assembly, synthesize
from clm_sandbox.iam import record
from clm_sandbox.nodesim import NodeSimulator
from tests.endpoints import store_kube_secret
from tests.integration.deployment import (
    REGION,
    Deployment,
    record_terminations,
    remove_example_objects,
    upload_config,
)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """A running Kubernetes v1.20.2 control plane, shared by the session (built first if not cached).

    Tests that share it must use their own namespaces and clean up cluster-scoped objects they create.
    A SIGTERM (a CI timeout, a kill) ends the session like Ctrl-C, so that the control plane is stopped too.
    """
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    ensure_built()
    with ControlPlane() as cp:
        yield cp


@pytest.fixture(scope="session")
def kube_api(control_plane: ControlPlane) -> client.ApiClient:
    """An admin API client for the session's control plane."""
    return config.new_client_from_config(str(control_plane.kubeconfig_path))


@pytest.fixture
def kube(control_plane: ControlPlane) -> Iterator[KubeClient]:
    """CLM's own Kubernetes client for the session's control plane."""
    with KubeClient.from_kubeconfig(control_plane.kubeconfig_path, cluster_id="sandbox") as client:
        yield client


@pytest.fixture(scope="session")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """The CDK app synthesized once for the session (cdk.json's context), like `cdk synth`."""
    return synthesize(tmp_path_factory.mktemp("cdk-out"), "Clm")


@pytest.fixture
def deployment(
    sandbox_aws: boto3.Session,
    assembly: Assembly,
    wait_scale: Callable[[float], None],
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Deployment]:
    """The CDK app deployed into moto as `cdk deploy` would and the example config uploaded; kube-1 is not in the
    registry yet (registering it is what starts its first run). Waits at the end until no execution runs, then
    removes the example's objects from the shared control plane. Every AWS call of the functions is judged against
    their own roles (IAM enforced as on AWS): a refused call fails the test unless it is marked iam_refusals."""
    wait_scale(0.02)
    record.clear()
    outputs = deploy_assembly(assembly, sandbox_aws.client, REGION)
    upload_config(sandbox_aws.client("s3"), outputs["ConfigBucketName"])
    store_kube_secret(sandbox_aws, "clm/kube-1", control_plane.kubeconfig_path.read_text())
    registry = DynamoRegistry(sandbox_aws.client("dynamodb"), outputs["RegistryTableName"])
    deployment = Deployment(sandbox_aws, registry, outputs, "aws:123456789012:eu-central-1:kube-1")
    record_terminations(deployment, monkeypatch)
    deployment.settle()  # the upload's reconciles end before a test registers a cluster (no late second run)
    yield deployment
    try:
        deployment.settle()  # nothing may run on after the test's moto is gone
    finally:
        deployment.stop_running()  # one that did not settle either
        remove_example_objects(kube_api)  # the next test's first apply creates them anew
    refused = [j for j in record.judged() if j.refused]
    if refused and not request.node.get_closest_marker("iam_refusals"):
        pytest.fail(f"calls refused by IAM (function, action, resource, why): {[_refusal(j) for j in refused]}")


def _refusal(judgement: record.Judgement) -> str:
    return f"{judgement.session} {judgement.action} on {judgement.resource}: {judgement.reason}"


@pytest.fixture
def nodes(deployment: Deployment, kube_api: client.ApiClient) -> Iterator[NodeSimulator]:
    """Simulated kubelets for the deployment's cluster (1 s boot, pods Ready 0.2 s after binding, grace x 0.1)."""
    with NodeSimulator(
        kube_api, deployment.session, deployment.cluster_id, boot_delay=1.0, pod_ready_delay=0.2, time_scale=0.1
    ) as simulator:
        yield simulator
