"""A zalando-eks cluster is named by its alias (CLM api/cluster.go Name(); provisioner/zalando_eks.go signs its tokens
for it), on moto's EKS: what CLM reaches with it, what it tags with it, and what a registry writer can reach by
choosing an alias (another cluster's alias or id, `*`, `/`, empty): nothing but refusals."""

from __future__ import annotations

import base64
import dataclasses

import pytest

from clm.errors import ValidationError
from clm.kube.auth import CLUSTER_ID_HEADER, EKS_TOKEN_PREFIX
from clm.kube.connect import connect_cluster
from clm.kube.errors import KubeAuthError
from clm.model import Cluster, NodePool
from clm.stacks.names import node_pool_stack_tags, owned_tags
from clm.validation import parse_cluster
from tests.endpoints import create_eks_cluster, self_signed

KUBE_1 = "aws:123456789012:eu-central-1:kube-1"
KUBE_2 = "aws:123456789012:eu-central-1:kube-2"
EKS_CA, _ = self_signed()
REGISTRY_URL = "https://kube-1.sandbox.example.org"  # CLM derives the hosted zone from it; not the API server's


def eks(alias: str = "team-a", cluster_id: str = KUBE_1, **items: str) -> Cluster:
    return Cluster(
        id=cluster_id,
        local_id=cluster_id.rsplit(":", 1)[-1],
        infrastructure_account="aws:123456789012",
        region="eu-central-1",
        provider="zalando-eks",
        alias=alias,
        api_server_url=REGISTRY_URL,
        config_items=dict(items),
    )


def bearer(client) -> str:
    return client.transport.api_client.configuration.get_api_key_with_prefix("BearerToken")


def test_the_name_is_the_alias_of_a_zalando_eks_cluster_else_the_id():
    assert eks().name == "team-a"
    assert dataclasses.replace(eks(), provider="zalando-aws").name == KUBE_1


def test_node_pool_stacks_are_tagged_with_the_name_the_cluster_stack_with_the_id():
    """CLM: node_pools.go tags node-pool stacks `kubernetes.io/cluster/<Name()>`, aws.go applyClusterStack the
    cluster stack `kubernetes.io/cluster/<ID>` (which proves a cluster CLM's: clm.stacks.provenance)."""
    pool = NodePool("default", "worker-default", 1, 2, ["m5.large"])
    assert node_pool_stack_tags(eks().name, pool)["kubernetes.io/cluster/team-a"] == "owned"
    assert owned_tags(KUBE_1) == {f"kubernetes.io/cluster/{KUBE_1}": "owned", "clm:managed-by": "clm"}


def test_clm_reaches_the_eks_cluster_named_by_the_alias_whatever_the_registry_url(aws):
    """The registry URL of a zalando-eks cluster is CLM's hosted-zone URL, not the API server's: CLM switches to the
    EKS endpoint (clusterpy.go); the token is for the alias."""
    endpoint = create_eks_cluster(aws, "team-a", EKS_CA, owner=KUBE_1)
    with connect_cluster(eks(), aws) as client:
        assert client.transport.server == endpoint.rstrip("/")
        token = bearer(client).removeprefix("Bearer ")
    assert token.startswith(EKS_TOKEN_PREFIX)
    url = base64.urlsafe_b64decode(token[len(EKS_TOKEN_PREFIX) :] + "==").decode()
    assert CLUSTER_ID_HEADER in url  # signed header, whose value is the alias (checked by clm_sandbox.eks_endpoint)


def test_an_alias_naming_another_clusters_eks_cluster_reaches_nothing(aws):
    """The attack: a registry writer gives kube-2 kube-1's alias (or an item names it). The EKS cluster of that name
    carries kube-1's ownership tag, so kube-2 gets no token sent there."""
    create_eks_cluster(aws, "team-a", EKS_CA, owner=KUBE_1)
    with pytest.raises(KubeAuthError, match=r"EKS cluster team-a \(the cluster's alias\) is not this cluster's"):
        connect_cluster(eks("team-a", KUBE_2), aws)


@pytest.mark.parametrize(
    "alias",
    ["", "*", "team-*", "team/a", "a", "team-", "Team-A", KUBE_2, "kubernetes.io/cluster/x", "t" * 101],
)
def test_an_alias_that_is_no_eks_name_is_refused_before_anything(alias):
    """`*` or `?` would select every cluster's resources in an EC2 filter, `/` or `:` reach into another tag key or
    another cluster's id-tagged resources, "" tags nothing: the Cluster Registry's alias pattern, within EKS's 100
    characters, at least 2."""
    data = {**eks().to_dict(), "alias": alias}
    with pytest.raises(ValidationError, match=r"alias.*cannot name a zalando-eks cluster"):
        parse_cluster(data)


def test_eks_cluster_name_is_refused_on_a_zalando_eks_cluster():
    data = {**eks().to_dict(), "config_items": {"eks_cluster_name": "other-team"}}
    with pytest.raises(ValidationError, match=r"eks_cluster_name.*named by its alias"):
        parse_cluster(data)
    assert parse_cluster({**data, "provider": "zalando-aws"}).config_items["eks_cluster_name"] == "other-team"


def test_a_valid_alias_parses():
    assert parse_cluster(eks("team-a-2").to_dict()).name == "team-a-2"
