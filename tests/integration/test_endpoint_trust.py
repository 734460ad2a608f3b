"""A registry writer cannot take CLM's EKS token: pointing api_server_url (and api_server_ca) at their own HTTPS
server, the kube step of a run refuses before sending anything, because EKS (moto, with the sandbox's patches) names
another endpoint. The same server does get requests when the deployment's secret says to go there (the control)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from clm.config.local import LocalSource
from clm.kube.errors import KubeAuthError
from clm.registry.clusters_yaml import load_clusters
from clm.workflow import kube_steps
from clm.workflow.cluster_access import kube_client
from clm.workflow.render_step import render_to_s3
from tests.endpoints import attacker_endpoint, create_eks_cluster, self_signed

EXAMPLES = Path(__file__).parents[2] / "examples"
BUCKET = "clm-artefacts"


@pytest.fixture
def run_env(sandbox_aws, monkeypatch):
    for name, value in {
        "CLM_REGISTRY_TABLE": "clm-registry",
        "CLM_CONFIG_SOURCE": "s3://clm-config/",
        "CLM_ARTEFACT_BUCKET": BUCKET,
    }.items():
        monkeypatch.setenv(name, value)
    sandbox_aws.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-central-1"}
    )
    return sandbox_aws


def kube_1(url: str, **config_items: str):
    cluster = load_clusters((EXAMPLES / "clusters.yaml").read_text())[0]
    return dataclasses.replace(cluster, api_server_url=url, config_items={**cluster.config_items, **config_items})


def test_a_registry_pointing_eks_credentials_elsewhere_is_refused_and_nothing_is_sent(run_env):
    endpoint = create_eks_cluster(run_env, "kube-1", self_signed()[0])
    with attacker_endpoint(lifetime=30) as attacker:
        cluster = kube_1(attacker.url, api_server_ca=attacker.ca_pem.decode())
        stored = render_to_s3(run_env.client("s3"), BUCKET, LocalSource(EXAMPLES / "config").fetch(), cluster)
        with pytest.raises(KubeAuthError) as caught:
            kube_steps.apply({"cluster_id": cluster.id, "rendering": stored["rendering"], "phase": "manifests"})
        assert attacker.url in str(caught.value) and endpoint in str(caught.value)
        assert str(caught.value).startswith(f"cluster {cluster.id}: ")
        assert attacker.connections == [] and attacker.requests == []


def test_the_control_the_deployments_secret_may_send_its_token_to_the_registry_url(run_env):
    run_env.client("secretsmanager").create_secret(Name="clm/kube-1", SecretString="deployment-token")
    with attacker_endpoint(lifetime=30) as attacker:
        cluster = kube_1(attacker.url, api_server_ca=attacker.ca_pem.decode(), kube_auth_secret="clm/kube-1")
        with kube_client(cluster) as kube:
            kube.get("/api/v1/namespaces/default")
        assert attacker.connections and ("/api/v1/namespaces/default", "Bearer deployment-token") in attacker.requests
