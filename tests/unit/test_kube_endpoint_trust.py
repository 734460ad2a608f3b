"""Where connect_cluster sends credentials: the decision table of auth path by registry api_server_url.

An EKS IAM token goes only to the endpoint EKS DescribeCluster names (moto serves it here); a Secrets Manager token
goes to the registry's URL, trusting config item api_server_ca, since the deployment controls the secret.
"""

from __future__ import annotations

import base64
import dataclasses

import pytest

from clm.kube.auth import EKS_TOKEN_PREFIX
from clm.kube.connect import connect_cluster, same_endpoint
from clm.kube.errors import KubeAuthError
from clm.model import Cluster
from tests.endpoints import create_eks_cluster, self_signed
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


@pytest.mark.parametrize("url", ["same", "different"])
def test_secret_path_honours_the_registry_url_and_ca(aws, endpoint, url):
    aws.client("secretsmanager").create_secret(Name="clm/kube-1", SecretString="secret-token")
    registry_url = endpoint if url == "same" else ELSEWHERE
    spec = cluster(registry_url, kube_auth_secret="clm/kube-1", api_server_ca=REGISTRY_CA.decode())
    with connect_cluster(spec, aws) as client:
        assert client.transport.server == registry_url.rstrip("/")
        assert ca_of(client) == REGISTRY_CA
        assert bearer(client) == "Bearer secret-token"


def test_secret_path_with_a_token_needs_a_registry_url(aws, endpoint):
    aws.client("secretsmanager").create_secret(Name="clm/kube-1", SecretString="secret-token")
    spec = dataclasses.replace(cluster("", kube_auth_secret="clm/kube-1"))
    with pytest.raises(KubeAuthError, match="holds a token but api_server_url is empty"):
        connect_cluster(spec, aws)


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
