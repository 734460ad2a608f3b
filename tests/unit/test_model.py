"""Validation of registry data: every error names the cluster and the field's path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from clm.errors import ValidationError
from clm.model import Cluster

VALID: dict[str, Any] = {
    "id": "aws:123456789012:eu-central-1:kube-1",
    "alias": "dev",
    "local_id": "kube-1",
    "api_server_url": "https://kube-1.example.org",
    "config_items": {"a": "1"},
    "criticality_level": 1,
    "environment": "test",
    "infrastructure_account": "aws:123456789012",
    "region": "eu-central-1",
    "provider": "zalando-aws",
    "lifecycle_status": "ready",
    "node_pools": [
        {
            "name": "default",
            "profile": "worker-default",
            "min_size": 1,
            "max_size": 3,
            "instance_types": ["m5.large"],
            "discount_strategy": "none",
            "config_items": {},
        }
    ],
}


def with_change(path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(VALID)
    target = data
    *parents, last = path.split(".")
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    if value is ...:
        del target[last]
    else:
        target[last] = value
    return data


def error_of(data: Any) -> str:
    with pytest.raises(ValidationError) as info:
        Cluster.from_dict(data, source="clusters.yaml")
    return str(info.value)


def test_valid_cluster_parses_with_defaults():
    cluster = Cluster.from_dict(VALID)
    assert cluster.node_pools[0].instance_types == ["m5.large"]
    assert cluster.account_id == "123456789012"
    assert cluster.status.problems == []
    assert Cluster.from_dict(cluster.to_dict()) == cluster


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("id", "has space", "id: 'has space' is not valid"),
        ("region", "europe", "region: 'europe' is not valid"),
        ("infrastructure_account", "aws:123", "infrastructure_account: 'aws:123' is not valid (aws:<12 digits>)"),
        ("lifecycle_status", "gone", "lifecycle_status: 'gone' is not one of requested, creating, ready"),
        ("criticality_level", "high", "criticality_level: must be an integer"),
        ("api_server_url", "ftp://x", "api_server_url: 'ftp://x' is not an http(s) URL"),
        ("local_id", "Kube_1", "local_id: 'Kube_1' is not valid"),
        ("surprise", 1, "surprise: unknown field"),
        ("node_pools.0.max_size", 0, "node_pools[0].min_size: must be <= max_size (1 > 0)"),
        ("node_pools.0.min_size", -1, "node_pools[0].min_size: must be >= 0"),
        ("node_pools.0.instance_types", [], "node_pools[0].instance_types: must be a non-empty list"),
        ("node_pools.0.discount_strategy", "cheap", "node_pools[0].discount_strategy: 'cheap' is not one of"),
        ("node_pools.0.colour", "red", "node_pools[0].colour: unknown field"),
        ("node_pools.0.name", ..., "node_pools[0].name: is required"),
        ("config_items", {"nested": {"a": 1}}, "config_items.nested: must be a string"),
        ("region", ..., "region: is required"),
    ],
)
def test_invalid_field_is_named_with_cluster(path, value, expected):
    data = with_change(path, value)
    message = error_of(data)
    assert expected in message
    assert message.startswith(f"clusters.yaml: cluster {data['id']}: ")


def test_all_problems_are_reported_at_once():
    data = with_change("region", "nowhere")
    data["infrastructure_account"] = "gcp:1"
    message = error_of(data)
    assert "region" in message
    assert "infrastructure_account" in message


def test_duplicate_node_pool_names():
    data = copy.deepcopy(VALID)
    data["node_pools"].append(copy.deepcopy(data["node_pools"][0]))
    assert "node_pools[1].name: duplicate node pool name 'default'" in error_of(data)


def test_instance_type_and_instance_types_together_rejected():
    data = with_change("node_pools.0.instance_type", "m5.large")
    assert "give instance_types or instance_type, not both" in error_of(data)


def test_legacy_instance_type_is_kept_for_export():
    data = with_change("node_pools.0.instance_types", ...)
    data["node_pools"][0]["instance_type"] = "m5.xlarge"
    pool = Cluster.from_dict(data).node_pools[0]
    assert pool.instance_types == ["m5.xlarge"]
    assert pool.to_dict()["instance_type"] == "m5.xlarge"
    assert "instance_types" not in pool.to_dict()


def test_scalar_config_items_become_strings():
    cluster = Cluster.from_dict(with_change("config_items", {"flag": True, "count": 3}))
    assert cluster.config_items == {"flag": "true", "count": "3"}


def test_not_a_mapping():
    assert "must be a mapping" in error_of(["not", "a", "cluster"])


def test_update_block_and_spot():
    cluster = Cluster.from_dict(with_change("config_items", {"cluster_update_block": "maintenance"}))
    assert cluster.update_blocked
    assert not cluster.node_pools[0].is_spot
