"""Where connect_cluster sends credentials: the decision table of auth path by registry api_server_url.

An EKS IAM token goes only to the endpoint EKS DescribeCluster names (moto serves it here), of an EKS cluster tagged
as the cluster's; a Secrets Manager token only to the server its secret names, trusting only the secret's CA: a
registry api_server_url or api_server_ca that differs is refused before anything is sent.
"""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from clm.kube.auth import EKS_TOKEN_PREFIX
from clm.kube.connect import connect_cluster, same_endpoint
from clm.kube.errors import KubeAuthError
from clm.model import Cluster
from tests.endpoints import create_eks_cluster, self_signed, store_kube_secret
from tests.unit.test_kube_auth import cluster as registry_cluster

EKS_CA, _ = self_signed()
REGISTRY_CA, _ = self_signed()
ELSEWHERE = "https://attacker.example.net:6443"


def cluster(api_server_url: str, **config_items: str) -> Cluster:
    spec = registry_cluster(eks_cluster_name="prod-eks", **config_items)
    return dataclasses.replace(spec, api_server_url=api_server_url)


def ca_of(client) -> bytes:
    with open(client.transport.api_client.configuration.ssl_ca_cert, "rb") as handle:
        return handle.read()


def bearer(client) -> str:
    return client.transport.api_client.configuration.get_api_key_with_prefix("BearerToken")


@pytest.fixture
def endpoint(aws) -> str:
    return create_eks_cluster(aws, "prod-eks", EKS_CA)


@pytest.mark.parametrize("url", ["", "same", "same-spelled-differently"])
def test_iam_path_uses_the_endpoint_and_ca_eks_names(aws, endpoint, url):
    registry_url = {"": "", "same": endpoint, "same-spelled-differently": endpoint.rstrip("/").upper() + ":443/"}[url]
    # A registry CA is not trusted on this path, even with the registry URL equal to the endpoint.
    ca_item = base64.b64encode(REGISTRY_CA).decode()
    with connect_cluster(cluster(registry_url, api_server_ca=ca_item), aws) as client:
        assert client.transport.server == endpoint.rstrip("/")  # the transport drops a trailing slash
        assert ca_of(client) == EKS_CA
        assert bearer(client).startswith("Bearer " + EKS_TOKEN_PREFIX)


def test_iam_path_refuses_a_registry_url_other_than_the_eks_endpoint_naming_both(aws, endpoint):
    with pytest.raises(KubeAuthError) as caught:
        connect_cluster(cluster(ELSEWHERE, api_server_ca=REGISTRY_CA.decode()), aws)
    message = str(caught.value)
    assert message.startswith("cluster aws:123456789012:eu-central-1:kube-1: ")
    assert ELSEWHERE in message and endpoint in message and "prod-eks" in message


def test_iam_path_without_an_eks_cluster_is_an_error_even_with_url_and_ca_in_the_registry(aws):
    with pytest.raises(KubeAuthError, match=r"EKS cluster prod-eks .*eks_cluster_name.* cannot be described"):
        connect_cluster(cluster(ELSEWHERE, api_server_ca=REGISTRY_CA.decode()), aws)


def token_secret(aws, server: str, ca: bytes | None = REGISTRY_CA) -> None:
    value = {"server": server, "token": "secret-token"}
    if ca:
        value["certificate-authority-data"] = base64.b64encode(ca).decode()
    store_kube_secret(aws, "clm/kube-1", json.dumps(value))


@pytest.mark.parametrize("url", ["", "same"])
def test_secret_path_uses_the_server_and_ca_the_secret_names(aws, endpoint, url):
    token_secret(aws, endpoint)
    spec = cluster(endpoint if url == "same" else "", kube_auth_secret="clm/kube-1", api_server_ca=REGISTRY_CA.decode())
    with connect_cluster(spec, aws) as client:
        assert client.transport.server == endpoint.rstrip("/")
        assert ca_of(client) == REGISTRY_CA
        assert bearer(client) == "Bearer secret-token"


def test_secret_path_sends_the_token_to_the_secrets_server_whatever_the_registry_url(aws, endpoint):
    """The attack: the registry's api_server_url pointed at the attacker's server, so that CLM sends it the token
    of the secret the item names. Before, CLM sent a secret's token to the registry's URL."""
    token_secret(aws, endpoint)
    with connect_cluster(cluster(ELSEWHERE, kube_auth_secret="clm/kube-1"), aws) as client:
        assert client.transport.server == endpoint.rstrip("/")
        assert ca_of(client) == REGISTRY_CA


@pytest.mark.parametrize("secret_ca", [EKS_CA, None])
def test_secret_path_refuses_a_registry_ca_other_than_the_secrets(aws, endpoint, secret_ca):
    token_secret(aws, endpoint, secret_ca)
    with pytest.raises(KubeAuthError, match="config item api_server_ca is not the certificate authority secret"):
        connect_cluster(cluster("", kube_auth_secret="clm/kube-1", api_server_ca=REGISTRY_CA.decode()), aws)


@pytest.mark.parametrize("value", ["secret-token", '{"token": "secret-token"}'])
def test_secret_path_refuses_a_token_without_its_server_even_with_a_registry_url(aws, endpoint, value):
    store_kube_secret(aws, "clm/kube-1", value)
    with pytest.raises(KubeAuthError, match="secret clm/kube-1 names no server"):
        connect_cluster(cluster(endpoint, kube_auth_secret="clm/kube-1"), aws)


def test_iam_path_refuses_an_eks_cluster_not_tagged_as_the_clusters(aws):
    """The attack: an item naming another team's EKS cluster in eks_cluster_name, so that CLM applies, scales down
    or drains there with its cluster-admin token."""
    create_eks_cluster(aws, "prod-eks", EKS_CA, owner="aws:123456789012:eu-central-1:team-b")
    with pytest.raises(KubeAuthError, match=r"EKS cluster prod-eks .* lacks the tag kubernetes.io/cluster/aws:"):
        connect_cluster(cluster(""), aws)


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("https://A.example.org/", "https://a.example.org", True),
        ("https://a.example.org:443", "https://a.example.org", True),
        ("https://a.example.org", "http://a.example.org", False),
        ("https://a.example.org", "https://a.example.org:8443", False),
        ("https://a.example.org", "https://a.example.org.evil.net", False),
        ("https://a.example.org@evil.net", "https://a.example.org", False),
        ("https://a.example.org/prefix", "https://a.example.org", False),
        ("https://a.example.org:x", "https://a.example.org", False),
    ],
)
def test_same_endpoint(first, second, same):
    assert same_endpoint(first, second) is same
