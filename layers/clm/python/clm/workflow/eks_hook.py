"""CLM's ZalandoEKSCreationHook (provisioner/zalando_eks.go) for a zalando-eks cluster, after its cluster stack.

CLM describes the EKS cluster named by the cluster's alias (provisioner/aws.go GetEKSClusterDetails; the alias is the
cluster's name: api/cluster.go Name()), writes `eks_endpoint`, `eks_certificate_authority_data` and
`eks_oidc_issuer_url` into the cluster's config items in the registry (only those that differ), and continues
(provisioner/clusterpy.go provision) with the API URL switched to the EKS endpoint and `service_cidr` set to the
EKS cluster's service range; `hosted_zone` and the load balancer certificate stay those computed from the
registry's URL. Here additionally: the EKS cluster must carry `kubernetes.io/cluster/<id>=owned` (its cluster
stack's tag), so an alias naming another cluster's EKS cluster reaches nothing of it, and the registry write is
conditional on the items still having the values read (a concurrent edit of them is read again, not overwritten).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from clm.errors import ClmError
from clm.kube.auth import decode_ca
from clm.kube.connect import owned_eks_cluster
from clm.model import Cluster

ENDPOINT_ITEM = "eks_endpoint"
CA_ITEM = "eks_certificate_authority_data"
OIDC_ITEM = "eks_oidc_issuer_url"
WRITTEN_ITEMS = (ENDPOINT_ITEM, CA_ITEM, OIDC_ITEM)
SERVICE_CIDR_ITEM = "service_cidr"
_SOURCE = "the cluster's alias"
_WRITE_ATTEMPTS = 3


class EksClusterUnavailable(ClmError):
    """The zalando-eks cluster's EKS cluster cannot be described, or has no endpoint yet."""

    asl_name = "EksClusterUnavailable"


class AliasNotUnique(ClmError):
    """A zalando-eks cluster's alias is another registry cluster's name in the same account and region."""

    asl_name = "AliasNotUnique"


@dataclass(frozen=True)
class EksDetails:
    """What CLM reads from EKS after the cluster stack (provisioner/aws.go EKSClusterDetails)."""

    endpoint: str
    certificate_authority: str  # base64, as EKS gives it and CLM stores it
    oidc_issuer_url: str
    service_cidr: str

    def items(self) -> dict[str, str]:
        """The config items CLM writes back into the registry."""
        return {ENDPOINT_ITEM: self.endpoint, CA_ITEM: self.certificate_authority, OIDC_ITEM: self.oidc_issuer_url}


def describe(eks: Any, cluster: Cluster) -> EksDetails:
    """The details of the EKS cluster named by `cluster`'s alias; KubeAuthError when it lacks the cluster's ownership
    tag, EksClusterUnavailable when it cannot be described or has no endpoint or CA yet."""
    try:
        described = eks.describe_cluster(name=cluster.alias)["cluster"]
    except Exception as exc:
        raise EksClusterUnavailable(
            f"cluster {cluster.id}: EKS cluster {cluster.alias} ({_SOURCE}) cannot be described: {type(exc).__name__}"
        ) from None
    owned_eks_cluster(described, cluster, cluster.alias, _SOURCE)
    endpoint = described.get("endpoint") or ""
    ca = (described.get("certificateAuthority") or {}).get("data") or ""
    if not endpoint.startswith("https://") or not ca:
        raise EksClusterUnavailable(f"cluster {cluster.id}: EKS cluster {cluster.alias} has no endpoint or CA yet")
    decode_ca(ca, f"EKS cluster {cluster.alias}'s certificate authority", cluster.id)  # CLM decodes it too
    network = described.get("kubernetesNetworkConfig") or {}
    ipv4 = network.get("ipFamily", "ipv4") == "ipv4"
    return EksDetails(
        endpoint=endpoint,
        certificate_authority=ca,
        oidc_issuer_url=((described.get("identity") or {}).get("oidc") or {}).get("issuer") or "",
        service_cidr=network.get("serviceIpv4Cidr" if ipv4 else "serviceIpv6Cidr") or "",
    )


def write_back(registry: Any, cluster: Cluster, details: EksDetails) -> Cluster:
    """Write the items of `details` that differ into the cluster's registry item (CLM's UpdateConfigItems), each only
    if it still has the value read (else the item is read again, up to 3 times); return the cluster with them.
    Idempotent: nothing is written once the registry has them."""
    for _ in range(_WRITE_ATTEMPTS):
        changed = {k: v for k, v in details.items().items() if cluster.config_items.get(k) != v}
        if not changed:
            return cluster
        old = {item: cluster.config_items.get(item) for item in changed}
        if registry.replace_config_items(cluster.id, old, changed):
            return dataclasses.replace(cluster, config_items={**cluster.config_items, **changed})
        cluster = registry.get(cluster.id)
    raise EksClusterUnavailable(
        f"cluster {cluster.id}: the registry's items {', '.join(WRITTEN_ITEMS)} changed during each of "
        f"{_WRITE_ATTEMPTS} writes; the next run writes them"
    )


def hooked(cluster: Cluster, details: EksDetails) -> Cluster:
    """The cluster as CLM provisions on after the hook: its API URL the EKS endpoint, `service_cidr` the EKS cluster's
    service range (when EKS names one), the written items set."""
    items = {**cluster.config_items, **details.items()}
    if details.service_cidr:
        items[SERVICE_CIDR_ITEM] = details.service_cidr
    return dataclasses.replace(cluster, api_server_url=details.endpoint, config_items=items)


def as_first_seen(cluster: Cluster, first_items: dict[str, str]) -> Cluster:
    """`cluster` with the written items as the run's first rendering saw them (`first_items`): its spec then hashes
    to the run's version unless something else changed in the registry during the run."""
    items = {k: v for k, v in cluster.config_items.items() if k not in WRITTEN_ITEMS}
    items.update({k: first_items[k] for k in WRITTEN_ITEMS if k in first_items})
    return dataclasses.replace(cluster, config_items=items)


def ensure_alias_owned(eks: Any, cluster: Cluster) -> str:
    """Before a decommission acts on what is tagged with a zalando-eks cluster's alias: how the alias is proved the
    cluster's (no EKS cluster has that name in the account and region, or the one that has carries the cluster's
    ownership tag); ClusterNotManaged when another cluster's EKS cluster has it (EKS names are unique per account
    and region, so its tags are that cluster's)."""
    from botocore.exceptions import ClientError

    from clm.kube.errors import KubeAuthError
    from clm.stacks.provenance import ClusterNotManaged

    try:
        described = eks.describe_cluster(name=cluster.alias)["cluster"]
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ResourceNotFoundException":
            return f"no EKS cluster {cluster.alias} exists"
        raise
    try:
        owned_eks_cluster(described, cluster, cluster.alias, _SOURCE)
    except KubeAuthError as exc:
        raise ClusterNotManaged(cluster.id, exc.message) from None
    return f"EKS cluster {cluster.alias} is the cluster's"


def ensure_name_unique(others: list[Cluster], cluster: Cluster) -> None:
    """Raise AliasNotUnique when another registry cluster of the same account and region has `cluster`'s name as its
    name (an alias, or a zalando-aws cluster's id): the tag `kubernetes.io/cluster/<name>` would be both's, so CLM
    would roll, terminate or delete the other's resources as this one's."""
    same = [
        other.id
        for other in others
        if other.id != cluster.id
        and (other.infrastructure_account, other.region) == (cluster.infrastructure_account, cluster.region)
        and cluster.name in (other.name, other.id)
    ]
    if same:
        raise AliasNotUnique(
            f"cluster {cluster.id}: its alias {cluster.name} is also the name of cluster {', '.join(same)} in the "
            f"registry, so the tag kubernetes.io/cluster/{cluster.name} does not tell their resources apart: nothing "
            "tagged with it is touched; give the cluster an alias of its own"
        )
