"""Which AWS session a step's Kubernetes client is made with: a kubeconfig secret is the hub's (Secrets Manager in the
hub), an EKS cluster's token is signed in its target by the target role there, and kept apart from the hub's."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from clm.targets import Target
from clm.workflow import cluster_access
from clm.workflow.target_aws import TargetAws

TARGET = Target("222222222222", "eu-west-1")


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, str]]:
    """What kept_client was asked: (the session factory, the principal)."""
    calls: list[tuple[Any, str]] = []

    def kept_client(cluster: Any, session: Any, principal: str) -> str:
        calls.append((session, principal))
        return "client"

    monkeypatch.setattr("clm.kube.connections.kept_client", kept_client)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "hub-key")
    return calls


class Where(TargetAws):
    def session(self) -> Any:
        return "target session"


def test_an_eks_cluster_elsewhere_gets_its_target_roles_session(made, example_clusters) -> None:
    where = Where(example_clusters[0].id, TARGET, home=False)
    with cluster_access.kube_client(example_clusters[0], where) as kube:
        assert kube == "client"
    [(factory, principal)] = made
    assert factory() == "target session"
    assert principal == f"hub-key as {TARGET}"  # never the hub's own kept client


def test_a_kubeconfig_secret_and_the_hubs_own_clusters_use_the_hubs_credentials(made, example_clusters) -> None:
    from clm.aws import session

    secret = dataclasses.replace(example_clusters[0], config_items={"kube_auth_secret": "clm/kube-1"})
    for cluster, where in (
        (secret, Where(secret.id, TARGET, home=False)),
        (example_clusters[0], Where(example_clusters[0].id, None, home=True)),
        (example_clusters[0], None),
    ):
        with cluster_access.kube_client(cluster, where):
            pass
    assert made == [(session, "hub-key")] * 3
