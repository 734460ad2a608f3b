"""Cluster credentials: EKS token shape, Secrets Manager secrets (in-process moto), connect_cluster."""

from __future__ import annotations

import base64
import dataclasses
import json
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import yaml

from clm.errors import ClmError
from clm.kube.auth import EKS_TOKEN_PREFIX, EksTokenSource, decode_ca, eks_token, read_secret_credentials
from clm.kube.connect import connect_cluster
from clm.kube.errors import KubeAuthError
from clm.model import Cluster
from tests.endpoints import KUBE_1, create_eks_cluster, self_signed, store_kube_secret

TOKEN = "sandbox-token-0123456789abcdef"
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


def presigned_url(token: str) -> str:
    assert token.startswith(EKS_TOKEN_PREFIX)
    encoded = token[len(EKS_TOKEN_PREFIX) :]
    assert "=" not in encoded and "+" not in encoded and "/" not in encoded  # base64url without padding
    return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()


def cluster(**config_items: str) -> Cluster:
    return Cluster(
        id="aws:123456789012:eu-central-1:kube-1",
        local_id="kube-1",
        infrastructure_account="aws:123456789012",
        region="eu-central-1",
        provider="zalando-aws",
        api_server_url="https://kube-1.example.org",
        config_items=dict(config_items),
    )


def kubeconfig(server: str = "https://kube-1.example.org") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [
            {
                "name": "k",
                "cluster": {"server": server, "certificate-authority-data": base64.b64encode(CA_PEM.encode()).decode()},
            }
        ],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }


def test_eks_token_is_a_presigned_regional_get_caller_identity_signing_the_cluster_header(aws):
    url = presigned_url(eks_token(aws, "kube-1"))
    parts = urlsplit(url)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    assert parts.scheme == "https" and parts.netloc == "sts.eu-central-1.amazonaws.com"
    assert query["Action"] == "GetCallerIdentity" and query["Version"] == "2011-06-15"
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-SignedHeaders"].split(";") == ["host", "x-k8s-aws-id"]
    assert "/eu-central-1/sts/aws4_request" in query["X-Amz-Credential"]
    # What EKS does with the token: GET the URL with the header; moto's STS answers it.
    answer = requests.get(url, headers={"x-k8s-aws-id": "kube-1"}, timeout=5)
    assert answer.status_code == 200 and "<Account>123456789012</Account>" in answer.text


def test_eks_token_source_reuses_a_token_briefly_and_hides_it(aws, monkeypatch):
    source = EksTokenSource(aws, "kube-1")
    first = source()
    assert source() == first
    assert first not in repr(source) and "kube-1" in repr(source)
    monkeypatch.setattr("clm.kube.auth.TOKEN_REUSE_SECONDS", -1.0)
    assert presigned_url(source()).startswith("https://sts.eu-central-1.amazonaws.com/")


@pytest.mark.parametrize(
    ("secret", "expected"),
    [
        (yaml.safe_dump(kubeconfig()), "kubeconfig"),
        (json.dumps(kubeconfig()), "kubeconfig"),
        (f"{TOKEN}\n", "token"),
        (json.dumps({"token": TOKEN}), "token"),
        (json.dumps({"token": TOKEN, "server": "https://s", "certificate-authority-data": "Q0E="}), "token"),
    ],
)
def test_secret_holds_a_kubeconfig_or_a_token(aws, secret, expected):
    store_kube_secret(aws, "clm/kube-1", secret)
    credentials = read_secret_credentials(aws, "clm/kube-1", KUBE_1)
    if expected == "kubeconfig":
        assert credentials.kubeconfig == kubeconfig()
        assert credentials.server == "https://kube-1.example.org"
        assert base64.b64decode(credentials.ca).decode() == CA_PEM
    else:
        assert credentials.token == TOKEN
        assert (credentials.server, credentials.ca) == (("https://s", "Q0E=") if "server" in secret else ("", ""))
    assert TOKEN not in repr(credentials)


def test_secret_errors_name_the_secret_and_never_its_value(aws):
    store_kube_secret(aws, "clm/junk", f"not a {TOKEN} kubeconfig", "c1")
    with pytest.raises(KubeAuthError) as caught:
        read_secret_credentials(aws, "clm/junk", "c1")
    assert str(caught.value) == "cluster c1: secret clm/junk holds neither a kubeconfig nor a token"
    with pytest.raises(KubeAuthError, match="secret clm/missing does not exist"):
        read_secret_credentials(aws, "clm/missing", "c1")


@pytest.mark.parametrize("bound_to", [None, "aws:123456789012:eu-central-1:kube-2"])
def test_a_secret_not_bound_to_the_cluster_is_never_read(aws, bound_to):
    """The attack: a registry item naming another cluster's secret (or any secret under clm/) as its
    kube_auth_secret. Only a secret tagged clm:cluster-id=<the item's id> is read."""
    store_kube_secret(aws, "clm/kube-2", yaml.safe_dump(kubeconfig()), bound_to)
    with pytest.raises(KubeAuthError) as caught:
        connect_cluster(cluster(kube_auth_secret="clm/kube-2"), aws)
    where = f"is bound to cluster {bound_to}" if bound_to else "has no tag clm:cluster-id"
    assert str(caught.value) == (
        f"cluster {KUBE_1}: secret clm/kube-2 {where}: CLM reads a cluster's credentials only from a secret tagged "
        f"clm:cluster-id={KUBE_1} (tag it so if it holds this cluster's credentials)"
    )
    assert TOKEN not in str(caught.value)


def test_connect_with_a_kubeconfig_secret(aws):
    store_kube_secret(aws, "clm/kube-1", yaml.safe_dump(kubeconfig()))
    client = connect_cluster(cluster(kube_auth_secret="clm/kube-1"), aws)
    try:
        assert client.transport.server == "https://kube-1.example.org"
        assert client.cluster_id == "aws:123456789012:eu-central-1:kube-1"
        assert TOKEN not in repr(client)
    finally:
        client.close()


def test_connect_with_a_token_secret_uses_the_server_and_ca_it_names(aws):
    ca = base64.b64encode(CA_PEM.encode()).decode()
    secret = {"server": "https://kube-1.example.org", "token": TOKEN, "certificate-authority-data": ca}
    store_kube_secret(aws, "clm/kube-1", json.dumps(secret))
    client = connect_cluster(cluster(kube_auth_secret="clm/kube-1", api_server_ca=ca), aws)
    try:
        configuration = client.transport.api_client.configuration
        assert configuration.host == "https://kube-1.example.org"
        with open(configuration.ssl_ca_cert) as handle:
            assert handle.read() == CA_PEM
    finally:
        client.close()


def test_connect_eks_uses_iam_tokens_for_the_named_cluster(aws):
    create_eks_cluster(aws, "prod-eks", self_signed()[0])
    spec = dataclasses.replace(cluster(eks_cluster_name="prod-eks"), api_server_url="")
    client = connect_cluster(spec, aws)
    try:
        configuration = client.transport.api_client.configuration
        bearer = configuration.get_api_key_with_prefix("BearerToken")
        assert bearer.startswith("Bearer " + EKS_TOKEN_PREFIX)
        assert presigned_url(bearer.removeprefix("Bearer ")).startswith("https://sts.eu-central-1.amazonaws.com/")
    finally:
        client.close()


def test_connect_eks_without_ca_asks_eks_and_names_the_cluster_when_it_is_missing(aws):
    with pytest.raises(KubeAuthError, match=r"EKS cluster kube-1 .*eks_cluster_name.* cannot be described"):
        connect_cluster(cluster(), aws)


def test_decode_ca_accepts_pem_or_base64_pem_and_names_the_culprit():
    assert decode_ca(CA_PEM, "x") == CA_PEM.encode()
    assert decode_ca(base64.b64encode(CA_PEM.encode()).decode(), "x") == CA_PEM.encode()
    with pytest.raises(ClmError, match="config item api_server_ca is neither PEM nor base64 of PEM"):
        decode_ca("garbage", "config item api_server_ca")
