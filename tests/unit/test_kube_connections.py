"""Clients a warm container keeps (clm.kube.connections): reuse, expiry, invalidation by the registry, isolation,
renewal after a 401; and discovery answers kept across uses."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import pytest

from clm.kube import connections
from clm.kube.client import KubeClient
from clm.kube.errors import KubeAuthError
from clm.model import Cluster
from tests.endpoints import create_eks_cluster, self_signed, store_kube_secret
from tests.unit.test_kube_auth import cluster as registry_cluster
from tests.unit.test_kube_auth import kubeconfig
from tests.unit.test_kube_client import RecordedTransport, response, status_body
from tests.unit.test_kube_endpoint_trust import ELSEWHERE, bearer

EKS_CA, _ = self_signed()


@pytest.fixture(autouse=True)
def nothing_kept() -> Iterator[None]:
    connections.forget()
    yield
    connections.forget()


@pytest.fixture
def eks(aws) -> str:
    """EKS cluster prod-eks in moto; returns its endpoint."""
    return create_eks_cluster(aws, "prod-eks", EKS_CA)


@pytest.fixture
def describes(monkeypatch) -> list[str]:
    """The names of the clusters clm.kube.connect described."""
    from clm.kube import connect

    calls: list[str] = []
    original = connect._describe_eks

    def describe(session, name, source, cluster_id):
        calls.append(name)
        return original(session, name, source, cluster_id)

    monkeypatch.setattr(connect, "_describe_eks", describe)
    return calls


def eks_cluster(api_server_url: str = "", cluster_id: str = "aws:123456789012:eu-central-1:kube-1") -> Cluster:
    spec = registry_cluster(eks_cluster_name="prod-eks")
    return dataclasses.replace(spec, id=cluster_id, api_server_url=api_server_url)


def kept(aws, spec: Cluster, principal: str = "AKIAROLL") -> KubeClient:
    return connections.kept_client(spec, lambda: aws, principal)


def test_a_warm_container_reuses_the_client_without_describing_again(aws, eks, describes):
    first = kept(aws, eks_cluster(eks))
    assert kept(aws, eks_cluster(eks)) is first
    assert describes == ["prod-eks"]
    assert first.transport.server == eks.rstrip("/") and bearer(first).startswith("Bearer k8s-aws-v1.")


def test_a_kept_client_expires_and_is_replaced_without_closing_it_under_a_request(aws, eks, describes, monkeypatch):
    """Another thread may be mid-request on the expired client (the sandbox's warm containers share this module):
    it is left to the garbage collector, not closed."""
    first = kept(aws, eks_cluster(eks))
    closed = []
    monkeypatch.setattr(first.transport, "close", lambda: closed.append(True))
    now = connections.time.monotonic()
    monkeypatch.setattr(connections.time, "monotonic", lambda: now + connections.MAX_AGE + 1)
    second = kept(aws, eks_cluster(eks))
    assert second is not first and closed == [] and describes == ["prod-eks", "prod-eks"]


def test_a_registry_change_of_api_server_url_never_sends_the_kept_token_elsewhere(aws, eks, describes):
    first = kept(aws, eks_cluster(eks))
    # The registry now points elsewhere: not the kept client, but connect's check, which refuses.
    with pytest.raises(KubeAuthError) as caught:
        kept(aws, eks_cluster(ELSEWHERE))
    assert ELSEWHERE in str(caught.value) and describes == ["prod-eks", "prod-eks"]
    # The old entry was dropped: going back connects afresh.
    assert kept(aws, eks_cluster(eks)) is not first and describes == ["prod-eks"] * 3


@pytest.mark.parametrize(
    ("item", "value"),
    [("kube_auth_secret", "clm/kube-1"), ("eks_cluster_name", "prod-eks-2"), ("api_server_ca", EKS_CA.decode())],
)
def test_a_change_of_an_auth_config_item_connects_afresh(aws, eks, item, value):
    store_kube_secret(aws, "clm/kube-1", json.dumps(kubeconfig()))
    create_eks_cluster(aws, "prod-eks-2", EKS_CA)
    first = kept(aws, eks_cluster())
    changed = eks_cluster()
    changed = dataclasses.replace(changed, config_items={**changed.config_items, item: value})
    assert kept(aws, changed) is not first


def test_clusters_and_principals_are_kept_apart(aws, eks, describes):
    arn = aws.client("eks").describe_cluster(name="prod-eks")["cluster"]["arn"]
    aws.client("eks").tag_resource(
        resourceArn=arn, tags={"kubernetes.io/cluster/aws:123456789012:eu-central-1:kube-2": "owned"}
    )
    one = kept(aws, eks_cluster(eks))
    other = kept(aws, eks_cluster(eks, cluster_id="aws:123456789012:eu-central-1:kube-2"))
    as_other_role = kept(aws, eks_cluster(eks), principal="AKIAKUBE")
    assert len({id(one), id(other), id(as_other_role)}) == 3
    # Each is kept: a new client for one cluster does not drop another's.
    assert kept(aws, eks_cluster(eks)) is one
    assert kept(aws, eks_cluster(eks, cluster_id="aws:123456789012:eu-central-1:kube-2")) is other


def test_a_401_is_sent_once_more_with_renewed_credentials():
    refused = RecordedTransport({("GET", "/api/v1/nodes"): [response(401, status_body(401, "Unauthorized", "no"))]})
    renewed = RecordedTransport({("GET", "/api/v1/nodes"): [response(200, {"items": []})]})
    client = KubeClient(refused, "c1")
    renewals = []
    client.renew = lambda: renewals.append(True) or renewed
    assert client.request("GET", "/api/v1/nodes") == {"items": []}
    assert client.request("GET", "/api/v1/nodes") == {"items": []}
    assert renewals == [True] and client.transport is renewed and len(refused.calls) == 1


def test_a_401_after_renewal_or_without_it_is_an_auth_error():
    def refusing() -> RecordedTransport:
        return RecordedTransport({("GET", "/api/v1/nodes"): [response(401, status_body(401, "Unauthorized", "no"))]})

    client = KubeClient(refusing(), "c1")
    with pytest.raises(KubeAuthError):
        client.request("GET", "/api/v1/nodes")
    client.renew = refusing
    with pytest.raises(KubeAuthError):
        client.request("GET", "/api/v1/nodes")


def discovery_transport(kinds: list[str]) -> RecordedTransport:
    resources = [{"name": k.lower() + "s", "kind": k, "namespaced": True} for k in kinds]
    return RecordedTransport(
        {
            ("GET", "/apis/example.org/v1"): [response(200, {"resources": resources})],
            ("GET", "/apis"): [response(200, {"groups": []})],
        }
    )


def test_kept_discovery_serves_what_it_found_and_asks_again_before_a_miss():
    transport = discovery_transport(["Widget"])
    client = KubeClient(transport, "c1")
    discovery = client.discovery
    assert discovery.resource("example.org/v1", "Widget")
    discovery.revalidate()  # the next use of the kept client
    assert discovery.resource("example.org/v1", "Widget")
    assert transport.paths("GET") == ["/apis/example.org/v1"]  # kept
    # A CRD applied by another container meanwhile: the miss is asked again, and found.
    transport.recordings[("GET", "/apis/example.org/v1")] = [
        response(200, {"resources": [{"name": "gadgets", "kind": "Gadget", "namespaced": False}]})
    ]
    assert discovery.resource("example.org/v1", "Gadget").name == "gadgets"
    assert transport.paths("GET") == ["/apis/example.org/v1"] * 2
    # Within the same use, a miss asked afresh is trusted.
    assert discovery.resource("example.org/v1", "Gizmo") is None
    assert transport.paths("GET") == ["/apis/example.org/v1"] * 2


def test_kept_discovery_answers_expire(monkeypatch):
    from clm.kube import discovery as discovery_module

    transport = discovery_transport(["Widget"])
    discovery = KubeClient(transport, "c1").discovery
    assert discovery.resource("example.org/v1", "Widget")
    now = discovery_module.time.monotonic()
    monkeypatch.setattr(discovery_module.time, "monotonic", lambda: now + discovery_module.MAX_AGE + 1)
    discovery.revalidate()
    assert discovery.resource("example.org/v1", "Widget")
    assert transport.paths("GET") == ["/apis/example.org/v1"] * 2
