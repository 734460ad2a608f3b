"""Cluster versions: `<config version>#<spec hash>`, computed exactly as Zalando CLM does.

The spec hash is CLM's: SHA-1 over the cluster's id, infrastructure account, local id, API server
URL, channel, environment, criticality level (int32 LE), lifecycle status, provider, region and
config items (sorted by key), then per node pool its name, profile, instance types, discount
strategy, min/max size (int64 LE) and config items (sorted); URL-safe base64 without padding.
Alias, owner and status are not part of it. Because the bytes are CLM's, a cluster migrated from
CLM keeps its spec hash, and the hash is stable across processes and Python versions.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from dataclasses import dataclass

from clm.model import Cluster


@dataclass(frozen=True)
class ClusterVersion:
    """A desired or current version of a cluster."""

    config_version: str
    spec_hash: str

    def __str__(self) -> str:
        return f"{self.config_version}#{self.spec_hash}"

    @classmethod
    def parse(cls, text: str) -> ClusterVersion | None:
        """Parse `config#hash`; an empty string (never provisioned) gives None."""
        if not text:
            return None
        config_version, _, spec_hash = text.rpartition("#")
        return cls(config_version, spec_hash)


def _items(items: dict[str, str]) -> bytes:
    return b"".join(key.encode() + items[key].encode() for key in sorted(items))


def spec_hash(cluster: Cluster) -> str:
    """CLM's hash of everything in the cluster spec that changes what gets deployed."""
    state = bytearray()
    for text in (
        cluster.id,
        cluster.infrastructure_account,
        cluster.local_id,
        cluster.api_server_url,
        cluster.channel or "",
        cluster.environment,
    ):
        state += text.encode()
    state += struct.pack("<i", cluster.criticality_level)
    for text in (cluster.lifecycle_status, cluster.provider, cluster.region):
        state += text.encode()
    state += _items(cluster.config_items)
    for pool in cluster.node_pools:
        state += pool.name.encode() + pool.profile.encode()
        state += b"".join(t.encode() for t in pool.instance_types)
        state += pool.discount_strategy.encode()
        state += struct.pack("<q", pool.min_size) + struct.pack("<q", pool.max_size)
        state += _items(pool.config_items)
    digest = hashlib.sha1(bytes(state), usedforsecurity=False).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def desired_version(cluster: Cluster, config_version: str) -> ClusterVersion:
    """The version the cluster should be at, given the config source's version."""
    return ClusterVersion(config_version, spec_hash(cluster))


def needs_update(cluster: Cluster, config_version: str) -> bool:
    """Whether the cluster's current version differs from the desired one."""
    return cluster.status.current_version != str(desired_version(cluster, config_version))
