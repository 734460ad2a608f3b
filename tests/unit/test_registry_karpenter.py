"""Karpenter node pools in the registry: accepted as CLM accepts them, exported again, hashed as CLM hashes them."""

from __future__ import annotations

import base64
import hashlib
import json
import struct

import pytest
import yaml

from clm.errors import ValidationError
from clm.model import Cluster, NodePool
from clm.registry.clusters_yaml import dump_clusters, load_clusters
from clm.version import spec_hash

REGISTRY = """
clusters:
- id: aws:123456789012:eu-central-1:kube-1
  alias: kube-1
  local_id: kube-1
  api_server_url: https://kube-1.example.org
  config_items: {karpenter_pools_enabled: "true"}
  criticality_level: 1
  environment: test
  infrastructure_account: aws:123456789012
  region: eu-central-1
  provider: zalando-eks
  lifecycle_status: ready
  node_pools:
  - {name: default-worker, profile: worker-default, min_size: 1, max_size: 3, instance_types: [m5.large],
     discount_strategy: none, config_items: {}}
  - {name: worker-karpenter, profile: worker-karpenter, min_size: 0, max_size: 0, instance_types: [],
     discount_strategy: none, config_items: {taints: "dedicated=worker-karpenter:NoSchedule"}}
  - {name: karpenter-defaults, profile: worker-karpenter, min_size: 0, max_size: 0,
     instance_types: [default-for-karpenter], discount_strategy: spot, config_items: {}}
"""


def error_of(text: str) -> str:
    with pytest.raises(ValidationError) as info:
        load_clusters(text, source="clusters.yaml")
    return str(info.value)


def pool_entry(**fields: object) -> str:
    """A one-cluster registry whose second pool is `fields` (flow mapping)."""
    body = ", ".join(f"{key}: {json.dumps(value)}" for key, value in fields.items())
    return REGISTRY.split("  - {name: worker-karpenter", maxsplit=1)[0] + "  - {" + body + "}\n"


def test_karpenter_pools_are_told_apart_as_clm_does():
    (cluster,) = load_clusters(REGISTRY)
    assert [p.name for p in cluster.karpenter_pools] == ["worker-karpenter", "karpenter-defaults"]
    assert [p.name for p in cluster.asg_pools] == ["default-worker"]
    assert [p.karpenter_instance_type_strategy for p in cluster.node_pools] == [
        "custom",
        "not-specified",
        "default-for-karpenter",
    ]
    assert not any(p.is_master for p in cluster.node_pools)
    assert NodePool("m", "master-default", 1, 1, ["m5.large"]).is_master


def test_registry_round_trips_karpenter_pools():
    loaded = load_clusters(REGISTRY)
    assert yaml.safe_load(dump_clusters(loaded, with_status=False)) == yaml.safe_load(REGISTRY)
    assert load_clusters(dump_clusters(loaded)) == loaded


@pytest.mark.parametrize(
    "omitted",
    [("instance_types",), ("min_size", "max_size"), ("instance_types", "min_size", "max_size")],
)
def test_karpenter_pool_may_leave_out_what_clm_does_not_use(omitted):
    fields = {"name": "kp", "profile": "worker-karpenter", "min_size": 0, "max_size": 0, "instance_types": []}
    for name in omitted:
        del fields[name]
    (cluster,) = load_clusters(pool_entry(**fields))
    pool = cluster.node_pool("kp")
    assert (pool.min_size, pool.max_size, pool.instance_types) == (0, 0, [])
    # Go reads what is absent as zero values: the spec hash is the one of the explicit form.
    (explicit,) = load_clusters(pool_entry(name="kp", profile="worker-karpenter", min_size=0, max_size=0))
    assert spec_hash(cluster) == spec_hash(explicit)
    # Exported with every field, and that imports as the same cluster.
    exported = yaml.safe_load(dump_clusters([cluster]))["clusters"][0]["node_pools"][1]
    assert exported["instance_types"] == [] and exported["min_size"] == 0 == exported["max_size"]
    assert load_clusters(dump_clusters([cluster])) == [cluster]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"name": "kp", "profile": "worker-default", "min_size": 0, "max_size": 1, "instance_types": []},
            "node_pools[1].instance_types (line 17): must be a non-empty list of instance type names",
        ),
        (
            {"name": "kp", "profile": "worker-default", "min_size": 0, "max_size": 1},
            "node_pools[1].instance_types (line 17): must be a non-empty list of instance type names",
        ),
        (
            {"name": "kp", "profile": "worker-default", "instance_types": ["m5.large"]},
            "node_pools[1].min_size (line 17): is required",
        ),
        (
            {"name": "kp", "profile": "worker-karpenter", "instance_types": "m5.large"},
            "node_pools[1].instance_types (line 17): must be a list of instance type names",
        ),
        (
            {"name": "kp", "profile": "worker-karpenter", "instance_types": ["M5 large"]},
            "node_pools[1].instance_types[0] (line 17): 'M5 large' is not an instance type name",
        ),
        (
            {"name": "kp", "profile": "worker-karpenter", "min_size": 2, "max_size": 1},
            "node_pools[1].min_size (line 17): must be <= max_size (2 > 1)",
        ),
        (
            {"name": "kp", "profile": "worker-karpenter", "min_size": -1},
            "node_pools[1].min_size (line 17): must be >= 0, got -1",
        ),
    ],
)
def test_errors_name_cluster_file_line_and_field(fields, message):
    error = error_of(pool_entry(**fields))
    assert "clusters.yaml" in error and "aws:123456789012:eu-central-1:kube-1" in error
    assert message in error


def _clm_layout(cluster: Cluster) -> bytes:
    """CLM's api/cluster.go Version() bytes, spelled out field by field for one cluster."""
    parts = [
        cluster.id,
        cluster.infrastructure_account,
        cluster.local_id,
        cluster.api_server_url,
        "",  # channel
        cluster.environment,
    ]
    data = "".join(parts).encode() + struct.pack("<i", cluster.criticality_level)
    data += (cluster.lifecycle_status + cluster.provider + cluster.region).encode()
    data += b"karpenter_pools_enabledtrue"
    data += b"default-worker" + b"worker-default" + b"m5.large" + b"none" + struct.pack("<qq", 1, 3)
    data += b"worker-karpenter" + b"worker-karpenter" + b"none" + struct.pack("<qq", 0, 0)
    data += b"taintsdedicated=worker-karpenter:NoSchedule"
    data += b"karpenter-defaults" + b"worker-karpenter" + b"default-for-karpenter" + b"spot" + struct.pack("<qq", 0, 0)
    return data


def test_spec_hash_of_karpenter_pools_is_clms():
    (cluster,) = load_clusters(REGISTRY)
    expected = base64.urlsafe_b64encode(hashlib.sha1(_clm_layout(cluster)).digest()).rstrip(b"=").decode()
    assert spec_hash(cluster) == expected
    # No instance types write nothing: the hash does not depend on how the registry spelled "none".
    (absent,) = load_clusters(REGISTRY.replace("min_size: 0, max_size: 0, instance_types: [],", ""))
    assert spec_hash(absent) == expected


def test_dynamodb_registry_keeps_karpenter_pools(example_registry):
    (cluster,) = load_clusters(REGISTRY)
    example_registry.put(cluster)
    stored = example_registry.get(cluster.id)
    assert stored.node_pools == cluster.node_pools
    assert spec_hash(stored) == spec_hash(cluster)
