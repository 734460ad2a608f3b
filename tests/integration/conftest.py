"""Integration fixtures: one real control plane per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client, config

from clm.kube.client import KubeClient
from clm_sandbox.controlplane import ControlPlane, ensure_built
from clm_sandbox.deploy_synth import Assembly, synthesize


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """A running Kubernetes v1.20.2 control plane, shared by the session (built first if not cached).

    Tests that share it must use their own namespaces and clean up cluster-scoped objects they create.
    """
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
