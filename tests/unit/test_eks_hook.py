"""CLM's ZalandoEKSCreationHook (provisioner/zalando_eks.go) on moto's EKS and DynamoDB: the EKS cluster named by the
alias described (provisioner/aws.go GetEKSClusterDetails), its details written back into the registry only where
they differ and only over the values read (a concurrent edit is read again, not lost), the cluster CLM provisions on
with (API URL the endpoint, service_cidr EKS's; clusterpy.go provision), and the alias proved the cluster's before a
decommission acts on what it tags."""

from __future__ import annotations

import dataclasses

import boto3
import pytest

from clm.kube.errors import KubeAuthError
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.stacks.provenance import ClusterNotManaged
from clm.version import spec_hash
from clm.workflow import eks_hook
from tests.endpoints import create_eks_cluster, self_signed
from tests.unit.test_eks_alias import KUBE_1, KUBE_2, REGISTRY_URL, eks

CA, _ = self_signed()


@pytest.fixture
def registry(aws: boto3.Session) -> DynamoRegistry:
    create_table(aws.client("dynamodb"), "clm-registry")
    store = DynamoRegistry(aws.client("dynamodb"), "clm-registry")
    store.put(eks(app_replicas="3"))
    return store


def test_the_hook_writes_the_details_back_once_and_the_rest_sees_the_endpoint(aws, registry):
    endpoint = create_eks_cluster(aws, "team-a", CA, owner=KUBE_1)
    cluster = registry.get(KUBE_1)
    details = eks_hook.describe(aws.client("eks"), cluster)
    described = aws.client("eks").describe_cluster(name="team-a")["cluster"]
    assert details == eks_hook.EksDetails(
        endpoint, described["certificateAuthority"]["data"], described["identity"]["oidc"]["issuer"], "172.20.0.0/16"
    )
    written = eks_hook.write_back(registry, cluster, details)
    stored = registry.get(KUBE_1)
    assert stored.config_items == written.config_items == {"app_replicas": "3", **details.items()}
    assert stored.api_server_url == REGISTRY_URL  # CLM writes the items, never the URL
    assert eks_hook.write_back(registry, stored, details) is stored  # nothing left to write

    hooked = eks_hook.hooked(stored, details)
    assert hooked.api_server_url == endpoint
    assert hooked.config_items["service_cidr"] == "172.20.0.0/16"
    # The run's version: the spec as the run's first rendering saw it (before the write-back).
    assert spec_hash(eks_hook.as_first_seen(stored, {"app_replicas": "3"})) == spec_hash(cluster)


def test_a_concurrent_edit_of_an_item_is_read_again_not_overwritten(aws, registry):
    create_eks_cluster(aws, "team-a", CA, owner=KUBE_1)
    stale = registry.get(KUBE_1)
    registry.put(dataclasses.replace(stale, config_items={**stale.config_items, "eks_endpoint": "https://edited"}))
    registry.put(dataclasses.replace(registry.get(KUBE_1), environment="edited meanwhile"))
    details = eks_hook.describe(aws.client("eks"), stale)
    assert not registry.replace_config_items(KUBE_1, {"eks_endpoint": None}, {"eks_endpoint": "x"})
    written = eks_hook.write_back(registry, stale, details)
    stored = registry.get(KUBE_1)
    assert stored.config_items["eks_endpoint"] == details.endpoint == written.config_items["eks_endpoint"]
    assert stored.environment == "edited meanwhile"  # the other edit is kept


def test_the_hook_refuses_an_alias_naming_another_clusters_eks_cluster(aws, registry):
    """The attack: kube-1's alias set to the name of kube-2's EKS cluster: its details are not written anywhere."""
    create_eks_cluster(aws, "team-b", CA, owner=KUBE_2)
    cluster = dataclasses.replace(registry.get(KUBE_1), alias="team-b")
    with pytest.raises(KubeAuthError, match=r"EKS cluster team-b .* is not this cluster's"):
        eks_hook.describe(aws.client("eks"), cluster)
    with pytest.raises(eks_hook.EksClusterUnavailable, match=r"EKS cluster team-c .* cannot be described"):
        eks_hook.describe(aws.client("eks"), dataclasses.replace(cluster, alias="team-c"))


def test_a_decommission_proves_the_alias_the_clusters(aws):
    create_eks_cluster(aws, "team-a", CA, owner=KUBE_1)
    assert eks_hook.ensure_alias_owned(aws.client("eks"), eks()) == "EKS cluster team-a is the cluster's"
    assert eks_hook.ensure_alias_owned(aws.client("eks"), eks("team-x")) == "no EKS cluster team-x exists"
    with pytest.raises(ClusterNotManaged, match=rf"cluster {KUBE_2}: nothing cleaned up: EKS cluster team-a"):
        eks_hook.ensure_alias_owned(aws.client("eks"), eks("team-a", KUBE_2))


@pytest.mark.parametrize(
    "other",
    [eks("team-a", KUBE_2), dataclasses.replace(eks(), id="kube-2", provider="zalando-aws")],
    ids=["another-eks-alias", "a-zalando-aws-id"],
)
def test_an_alias_that_is_another_clusters_name_is_refused(other):
    """The attack: an alias equal to another EKS cluster's alias, or to a zalando-aws cluster's id (its tag
    `kubernetes.io/cluster/<id>`): both clusters' resources would carry the same tag."""
    mine = eks(other.name, KUBE_1)
    with pytest.raises(eks_hook.AliasNotUnique, match=f"its alias {other.name} is also the name of cluster {other.id}"):
        eks_hook.ensure_name_unique([mine, other], mine)
    eks_hook.ensure_name_unique([mine, dataclasses.replace(other, region="eu-west-1")], mine)
