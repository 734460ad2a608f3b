"""A registry writer cannot take CLM's credentials: pointing api_server_url (and api_server_ca) at their own HTTPS
server, the kube step of a run refuses before sending anything, because EKS (moto, with the sandbox's patches) or the
cluster's secret names another endpoint; an item naming another cluster's secret is refused as well. The same server
does get requests when the deployment's secret names it (the control)."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import pytest

from clm.config.local import LocalSource
from clm.kube.errors import KubeAuthError
from clm.registry.clusters_yaml import load_clusters
from clm.workflow import kube_steps
from clm.workflow.cluster_access import kube_client
from clm.workflow.render_step import render_to_s3
from tests.endpoints import KUBE_1, attacker_endpoint, create_eks_cluster, self_signed, store_kube_secret

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


def secret_for(server: str, ca_pem: bytes) -> str:
    ca = base64.b64encode(ca_pem).decode()
    return json.dumps({"server": server, "token": "deployment-token", "certificate-authority-data": ca})


def test_an_item_cannot_send_a_secrets_token_elsewhere_nor_use_another_clusters_secret(run_env):
    """The attack: an item (kube-1's own, rewritten, or a made-up decommission-requested one) naming kube-1's secret
    and the attacker's api_server_url (and CA). Before, CLM read the secret and sent its token to the registry's
    URL; now the token goes only to the server the secret names, and only for the cluster the secret is bound to."""
    server, ca = "https://kube-1.example.org:6443", self_signed()[0]
    store_kube_secret(run_env, "clm/kube-1", secret_for(server, ca), KUBE_1)
    with attacker_endpoint(lifetime=30) as attacker:
        rewritten = kube_1(attacker.url, kube_auth_secret="clm/kube-1")
        with kube_client(rewritten) as kube:
            assert kube.transport.server == server  # the secret's server: the token never goes to the registry's
        with_ca = kube_1(attacker.url, api_server_ca=attacker.ca_pem.decode(), kube_auth_secret="clm/kube-1")
        refused = pytest.raises(KubeAuthError, match="config item api_server_ca is not the certificate authority")
        with refused, kube_client(with_ca):
            pass
        made_up = dataclasses.replace(
            kube_1(attacker.url, kube_auth_secret="clm/kube-1", remove_volumes="true"),
            id="aws:123456789012:eu-central-1:team-b",
            local_id="team-b",
            lifecycle_status="decommission-requested",
        )
        with (
            pytest.raises(KubeAuthError, match=f"secret clm/kube-1 is bound to cluster {KUBE_1}: "),
            kube_client(made_up),
        ):
            pass
        assert attacker.connections == [] and attacker.requests == []


def test_the_control_the_deployments_secret_sends_its_token_to_the_server_it_names(run_env):
    with attacker_endpoint(lifetime=30) as attacker:
        store_kube_secret(run_env, "clm/kube-1", secret_for(attacker.url, attacker.ca_pem), KUBE_1)
        with kube_client(kube_1("", kube_auth_secret="clm/kube-1")) as kube:
            kube.get("/api/v1/namespaces/default")
        assert attacker.connections and ("/api/v1/namespaces/default", "Bearer deployment-token") in attacker.requests
