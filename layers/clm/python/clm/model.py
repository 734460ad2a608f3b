"""The registry's data model: Cluster, NodePool, ClusterStatus and Problem, with validation.

Field names and meanings follow Zalando CLM's registry (clusters.yaml), so files migrate as they are.
`Cluster.from_dict` validates everything at once and raises one ValidationError listing every
culprit by its path (and line, when the data came from YAML).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

PROVIDERS = ("zalando-aws", "zalando-eks")  # what CLM provisions, as Zalando's (config/config.go --provider)
LIFECYCLE_STATUSES = ("requested", "creating", "ready", "decommission-requested", "decommissioned")
# A cluster in these is new: its first provision creates every node, so nothing is rolled
# (CLM provisioner/clusterpy.go provisionNodePoolGroup: ClusterLifecycleStatusRequested, ...StatusCreating).
NEW_CLUSTER_STATUSES = ("requested", "creating")
DISCOUNT_STRATEGIES = ("none", "spot", "spot_max_price")
UPDATE_BLOCK_ITEM = "cluster_update_block"
EKS_PROVIDER = "zalando-eks"  # CLM's api.ZalandoEKSProvider: an EKS cluster, named by its alias
# CLM's api.NodePool.IsKarpenter: a pool of this profile has no auto scaling group; Karpenter launches its nodes.
KARPENTER_PROFILE = "worker-karpenter"
# CLM's instance type that asks provisioners.yaml for its default instance families.
KARPENTER_DEFAULT_TYPES = "default-for-karpenter"
# Zalando CLM's problem type URLs (controller/controller.go), so imported and new problems compare equal.
PROBLEM_TYPES = "https://cluster-lifecycle-manager.zalando.org/problems/"

CLUSTER_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9:._-]{0,199}")
LOCAL_ID_RE = re.compile(r"[a-z][a-z0-9-]{0,62}")
POOL_NAME_RE = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
REGION_RE = re.compile(r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d")
ACCOUNT_RE = re.compile(r"aws:\d{12}")
SLUG_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")
URL_RE = re.compile(r"https?://[^\s/]+(/\S*)?")


@dataclass(frozen=True)
class Problem:
    """A problem recorded on a cluster, in CLM's (RFC 7807-like) shape."""

    title: str
    type: str = PROBLEM_TYPES + "general-error"
    detail: str = ""
    instance: str = ""
    status: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain dict in CLM's field order."""
        return {
            "detail": self.detail,
            "instance": self.instance,
            "status": self.status,
            "title": self.title,
            "type": self.type,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Problem:
        """Build from a dict written by `to_dict` (or by CLM)."""
        return cls(
            title=str(data.get("title", "")),
            type=str(data.get("type", cls.type)),
            detail=str(data.get("detail", "")),
            instance=str(data.get("instance", "")),
            status=int(data.get("status", 0)),
        )


@dataclass
class ClusterStatus:
    """What CLM last did to a cluster: versions and problems."""

    current_version: str = ""
    last_version: str = ""
    next_version: str = ""
    problems: list[Problem] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict in CLM's field order."""
        return {
            "current_version": self.current_version,
            "last_version": self.last_version,
            "next_version": self.next_version,
            "problems": [p.to_dict() for p in self.problems],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ClusterStatus:
        """Build from a dict; None gives an empty status."""
        data = data or {}
        return cls(
            current_version=str(data.get("current_version") or ""),
            last_version=str(data.get("last_version") or ""),
            next_version=str(data.get("next_version") or ""),
            problems=[Problem.from_dict(p) for p in data.get("problems") or []],
        )


@dataclass
class NodePool:
    """A node pool: an auto scaling group rendered from the profile's stack template, or (profile
    `worker-karpenter`) Karpenter NodePool/EC2NodeClass objects rendered from its provisioners.yaml."""

    name: str
    profile: str
    min_size: int
    max_size: int
    instance_types: list[str]
    discount_strategy: str = "none"
    config_items: dict[str, str] = field(default_factory=dict)
    # True when the registry used CLM's deprecated single `instance_type` field; kept for export.
    legacy_instance_type: bool = False

    @property
    def is_spot(self) -> bool:
        """Whether the pool runs on spot instances."""
        return self.discount_strategy in ("spot", "spot_max_price")

    @property
    def is_master(self) -> bool:
        """Whether the pool holds the control plane (CLM: the profile contains "master")."""
        return "master" in self.profile

    @property
    def is_karpenter(self) -> bool:
        """Whether Karpenter provisions the pool's nodes (no auto scaling group, no node-pool stack)."""
        return self.profile == KARPENTER_PROFILE

    @property
    def taints(self) -> list[dict[str, str]] | None:
        """CLM's `Taints`: the `taints` config item parsed (Key, Value, Effect), invalid entries skipped."""
        from clm.pool_fields import taints

        return taints(self.config_items)

    @property
    def karpenter_requirements(self) -> list[dict[str, Any]] | None:
        """CLM's `KarpenterRequirements`: the `requirements` config item (YAML) as Key, Operator, Values,
        MinValues records."""
        from clm.pool_fields import karpenter_requirements

        return karpenter_requirements(self.config_items)

    @property
    def karpenter_instance_type_strategy(self) -> str:
        """CLM's `KarpenterInstanceTypeStrategy`: not-specified, default-for-karpenter or custom."""
        if not self.instance_types:
            return "not-specified"
        if self.instance_types == [KARPENTER_DEFAULT_TYPES]:
            return KARPENTER_DEFAULT_TYPES
        return "custom"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict in CLM's format, with `instance_type` where the input had it."""
        data: dict[str, Any] = {
            "name": self.name,
            "profile": self.profile,
            "min_size": self.min_size,
            "max_size": self.max_size,
        }
        if self.legacy_instance_type:
            data["instance_type"] = self.instance_types[0]
        else:
            data["instance_types"] = list(self.instance_types)
        data["discount_strategy"] = self.discount_strategy
        data["config_items"] = dict(self.config_items)
        return data


@dataclass
class Cluster:
    """A cluster as the registry describes it (spec), plus its status."""

    id: str
    local_id: str
    infrastructure_account: str
    region: str
    provider: str
    lifecycle_status: str = "requested"
    alias: str = ""
    api_server_url: str = ""
    environment: str = ""
    criticality_level: int = 0
    config_items: dict[str, str] = field(default_factory=dict)
    node_pools: list[NodePool] = field(default_factory=list)
    # Optional CLM fields, exported only when set.
    channel: str | None = None
    owner: str | None = None
    account_name: str | None = None
    created_at: str | None = None
    status: ClusterStatus = field(default_factory=ClusterStatus)

    @property
    def account_id(self) -> str:
        """The 12-digit AWS account id of `infrastructure_account`."""
        return self.infrastructure_account.split(":", 1)[1]

    @property
    def name(self) -> str:
        """CLM's cluster name (api/cluster.go Name()): the alias of a zalando-eks cluster, else the id. It names the
        EKS cluster and the tag `kubernetes.io/cluster/<name>` of the cluster's pools, instances and volumes."""
        return self.alias if self.provider == EKS_PROVIDER else self.id

    @property
    def is_eks(self) -> bool:
        """Whether the cluster is a zalando-eks one (CLM's ZalandoEKSProvisioner)."""
        return self.provider == EKS_PROVIDER

    @property
    def is_new(self) -> bool:
        """True while the cluster was never provisioned (lifecycle requested or creating): no node is rolled."""
        return self.lifecycle_status in NEW_CLUSTER_STATUSES

    @property
    def update_blocked(self) -> bool:
        """True when the `cluster_update_block` config item stops all updates."""
        return UPDATE_BLOCK_ITEM in self.config_items

    def node_pool(self, name: str) -> NodePool:
        """The node pool called `name` (KeyError when absent)."""
        for pool in self.node_pools:
            if pool.name == name:
                return pool
        raise KeyError(f"cluster {self.id} has no node pool {name!r}")

    @property
    def asg_pools(self) -> list[NodePool]:
        """The pools backed by an auto scaling group (CLM's `ASGBackedPools`), in registry order."""
        return [pool for pool in self.node_pools if not pool.is_karpenter]

    @property
    def karpenter_pools(self) -> list[NodePool]:
        """The pools Karpenter provisions (CLM's `KarpenterPools`), in registry order."""
        return [pool for pool in self.node_pools if pool.is_karpenter]

    def spec_dict(self) -> dict[str, Any]:
        """The spec as a plain dict in CLM's format, without status."""
        data: dict[str, Any] = {
            "id": self.id,
            "alias": self.alias,
            "local_id": self.local_id,
            "api_server_url": self.api_server_url,
        }
        if self.channel is not None:
            data["channel"] = self.channel
        data.update(
            {
                "config_items": dict(self.config_items),
                "criticality_level": self.criticality_level,
                "environment": self.environment,
                "infrastructure_account": self.infrastructure_account,
                "region": self.region,
                "provider": self.provider,
                "lifecycle_status": self.lifecycle_status,
            }
        )
        for name in ("owner", "account_name", "created_at"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        data["node_pools"] = [pool.to_dict() for pool in self.node_pools]
        return data

    def to_dict(self) -> dict[str, Any]:
        """Spec and status as a plain dict in CLM's format."""
        data = self.spec_dict()
        data["status"] = self.status.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> Cluster:
        """Validate `data` (CLM's registry format) and build a Cluster, or raise ValidationError."""
        from clm.validation import parse_cluster

        return parse_cluster(data, source)
