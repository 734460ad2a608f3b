"""CLM's cluster methods for templates (api/cluster.go): `name`, `worker_role_arn`, `oidc_provider`, and those that
read the other clusters of the same infrastructure account (the registry's AccountClusters):
`iam_role_trust_relationship_template`, `sibling_cluster`, `is_oldest_ready_cluster_in_the_region`.

The other clusters are read from the registry the first time a template asks (never otherwise), only those of the
cluster's own account, at most MAX_ACCOUNT_CLUSTERS (more is an error, not a trust policy silently cut short). A
template sees of another cluster only AccountCluster's fields (no config items: CLM hands templates the whole
sibling, whose items another cluster's owner wrote for that cluster alone), its text marked as registry text
(clm.render.origins), so that a registry writer's alias or URL is checked where it lands.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from clm.model import Cluster
from clm.render.jwks import go_json
from clm.render.network_values import hosted_zone
from clm.render.origins import derived, marked

EKS_PROVIDER, READY = "zalando-eks", "ready"
EKS_ISSUER_ITEM = "eks_oidc_issuer_url"
MAX_ACCOUNT_CLUSTERS = 100
SERVICE_ACCOUNT = "system:serviceaccount:${SERVICE_ACCOUNT}"
_SIBLING_FIELDS = ("id", "local_id", "alias", "region", "provider", "lifecycle_status", "api_server_url", "created_at")


def cluster_name(provider: str, alias: str, ident: str) -> str:
    """CLM's Name(): an EKS cluster's alias, any other cluster's id."""
    return alias if provider == EKS_PROVIDER else ident


def oidc_provider(provider: str, local_id: str, api_server_url: str, eks_issuer: str) -> str:
    """CLM's InitOIDCProvider: an EKS cluster's issuer URL without `https://`, else `<local id>.<hosted zone>`."""
    if provider == EKS_PROVIDER:
        return eks_issuer.removeprefix("https://")
    return f"{local_id}.{hosted_zone(api_server_url)}"


@dataclass(frozen=True)
class AccountCluster:
    """What a template sees of another cluster of the account (SiblingCluster), with CLM's methods."""

    id: str
    local_id: str
    alias: str
    region: str
    provider: str
    lifecycle_status: str
    api_server_url: str
    created_at: str
    infrastructure_account: str
    eks_oidc_issuer_url: str = ""

    @classmethod
    def of(cls, cluster: Cluster) -> AccountCluster:
        """The fields of a registry cluster, its text marked as the registry's (naming the cluster)."""
        text = {name: str(getattr(cluster, name) or "") for name in _SIBLING_FIELDS}
        text["infrastructure_account"] = cluster.infrastructure_account
        text["eks_oidc_issuer_url"] = cluster.config_items.get(EKS_ISSUER_ITEM, "")
        return cls(
            **{name: marked(value, f"registry field {name} of cluster {cluster.id}") for name, value in text.items()}
        )

    @property
    def name(self) -> str:
        """CLM's Name()."""
        return cluster_name(self.provider, self.alias, self.id)

    @property
    def worker_role_arn(self) -> str:
        """CLM's WorkerRoleARN(): `arn:aws:iam::<account>:role/<local id>-worker`."""
        return f"arn:aws:iam::{self.infrastructure_account.removeprefix('aws:')}:role/{self.local_id}-worker"

    @property
    def oidc_provider(self) -> str:
        """CLM's OIDCProvider."""
        try:
            provider = oidc_provider(self.provider, self.local_id, self.api_server_url, self.eks_oidc_issuer_url)
        except ValueError as exc:
            raise ValueError(f"error while getting trust relationship for {self.alias}: {exc}") from None
        return marked(provider, derived(f"registry fields of cluster {self.id}"))


def trust_relationship(clusters: Sequence[AccountCluster]) -> str:
    """CLM's IAMRoleTrustRelationshipTemplate: EC2 and EKS Pod Identity, then per ready cluster of the account its
    worker role and its OIDC provider's service accounts (`${SERVICE_ACCOUNT}` for the template to fill), as Go's
    json.Marshal writes it. Every cluster's OIDC provider is its own (CLM's is empty for a cluster after this one
    in its registry's order, whose InitOIDCProvider had not run yet)."""
    statements: list[dict[str, Any]] = [
        {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": ["sts:AssumeRole"]},
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        },
    ]
    statements[0]["Sid"] = "CLMApplied"
    for cluster in clusters:
        if cluster.lifecycle_status != READY:
            continue
        provider = cluster.oidc_provider
        account = cluster.infrastructure_account.removeprefix("aws:")
        statements.append(
            {"Effect": "Allow", "Principal": {"AWS": cluster.worker_role_arn}, "Action": ["sts:AssumeRole"]}
        )
        statements.append(
            {
                "Effect": "Allow",
                "Principal": {"Federated": f"arn:aws:iam::{account}:oidc-provider/{provider}"},
                "Action": ["sts:AssumeRoleWithWebIdentity"],
                "Condition": {"StringLike": {f"{provider}:sub": SERVICE_ACCOUNT}},
            }
        )
    return go_json({"Version": "2012-10-17", "Statement": statements}, indent=None)


class TemplateCluster(Cluster):
    """The cluster as templates see it: the registry view with CLM's methods; the account's clusters come from
    `account` (called once, on the first read of a method that needs them)."""

    _account: Callable[[], list[AccountCluster]] | None = None

    @property
    def name(self) -> str:
        """CLM's Name()."""
        return cluster_name(self.provider, self.alias, self.id)

    @property
    def worker_role_arn(self) -> str:
        """CLM's WorkerRoleARN()."""
        return AccountCluster.of(self).worker_role_arn

    @property
    def oidc_provider(self) -> str:
        """CLM's OIDCProvider."""
        return AccountCluster.of(self).oidc_provider

    def _account_clusters(self) -> list[AccountCluster]:
        if self._account is None:
            raise ValueError("the other clusters of the account are not available to this rendering")
        return self._account()

    @property
    def iam_role_trust_relationship_template(self) -> str:
        """CLM's IAMRoleTrustRelationshipTemplate, of the account's clusters (this one among them)."""
        return trust_relationship(self._account_clusters())

    @property
    def sibling_cluster(self) -> AccountCluster | None:
        """CLM's SiblingCluster(): the oldest other ready cluster of the account in this region, or None."""
        found = [c for c in self._account_clusters() if c.id != self.id and c.region == self.region]
        ready = [c for c in found if c.lifecycle_status == READY]
        return min(ready, key=lambda c: c.created_at, default=None)

    @property
    def is_oldest_ready_cluster_in_the_region(self) -> bool:
        """CLM's IsOldestReadyClusterInTheRegion(): whether the first ready cluster of the region (by creation) is
        this one; true when the account has no clusters."""
        clusters = self._account_clusters()
        for cluster in clusters:
            if cluster.lifecycle_status == READY and cluster.region == self.region:
                return cluster.id == self.id
        return not clusters


def template_cluster(view: Cluster, list_clusters: Callable[[], list[Cluster]] | None) -> TemplateCluster:
    """`view` (clm.render.origins.registry_view) with CLM's methods; the account's clusters from `list_clusters`
    (the registry's; None: not available), read once when first needed, sorted by creation as CLM's registry."""
    fields = {field.name: getattr(view, field.name) for field in dataclasses.fields(view)}
    cluster = TemplateCluster(**fields)
    if list_clusters is None:
        return cluster
    cached: list[list[AccountCluster]] = []

    def account() -> list[AccountCluster]:
        if not cached:
            same = [c for c in list_clusters() if c.infrastructure_account == view.infrastructure_account]
            if len(same) > MAX_ACCOUNT_CLUSTERS:
                raise ValueError(
                    f"the account {view.infrastructure_account} has {len(same)} clusters in the registry, more than "
                    f"the {MAX_ACCOUNT_CLUSTERS} a rendering reads"
                )
            cached.append([AccountCluster.of(c) for c in sorted(same, key=lambda c: (c.created_at or "", c.id))])
        return cached[0]

    cluster._account = account
    return cluster
