"""A node pool's fields that CLM computes from its config items (api/node_pool.go): Taints, KarpenterRequirements,
KarpenterInstanceTypeStrategy; and registry text in them stays marked for the renderer's checks."""

from __future__ import annotations

import pytest

from clm.model import NodePool
from clm.pool_fields import parse_taint
from clm.render.origins import RegistryStr, registry_view
from clm.render.pool_groups import zone_distributed_node_pool_groups


# pkg/kubernetes TestParseTaint
@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("dedicated=test:NoSchedule", {"Key": "dedicated", "Value": "test", "Effect": "NoSchedule"}),
        ("example:NoSchedule", {"Key": "example", "Value": "", "Effect": "NoSchedule"}),
        ("dedicated", {"Key": "dedicated", "Value": "", "Effect": ""}),
        ("dedicated=test", None),  # key and value without an effect
        ("dedicated:foo=NoSchedule", None),  # invalid effect
    ],
)
def test_parse_taint(spec: str, expected: dict[str, str] | None) -> None:
    assert parse_taint(spec) == expected


def _pool(**items: str) -> NodePool:
    return NodePool("pool", "worker-karpenter", 0, 10, [], config_items=items)


def test_taints_skip_invalid_entries_and_are_none_without_the_item() -> None:
    pool = _pool(taints="dedicated=ml:NoSchedule,bad=taint,gpu:NoExecute")
    assert pool.taints == [
        {"Key": "dedicated", "Value": "ml", "Effect": "NoSchedule"},
        {"Key": "gpu", "Value": "", "Effect": "NoExecute"},
    ]
    assert _pool().taints is None


def test_karpenter_requirements_from_yaml() -> None:
    requirements = """
- key: karpenter.k8s.aws/instance-family
  operator: In
  values: [m5, m6i]
- Key: kubernetes.io/arch
  operator: In
  values: ["arm64"]
  minValues: 1
"""
    assert _pool(requirements=requirements).karpenter_requirements == [
        {"Key": "karpenter.k8s.aws/instance-family", "Operator": "In", "Values": ["m5", "m6i"], "MinValues": None},
        {"Key": "kubernetes.io/arch", "Operator": "In", "Values": ["arm64"], "MinValues": 1},
    ]
    assert _pool().karpenter_requirements is None
    assert _pool(requirements="{not: [a list").karpenter_requirements == []  # CLM logs the error and goes on


def test_karpenter_instance_type_strategy() -> None:
    assert _pool().karpenter_instance_type_strategy == "not-specified"
    pool = NodePool("p", "worker-karpenter", 0, 1, ["default-for-karpenter"])
    assert pool.karpenter_instance_type_strategy == "default-for-karpenter"
    assert NodePool("p", "worker-karpenter", 0, 1, ["m5.large"]).karpenter_instance_type_strategy == "custom"


def test_registry_text_stays_marked_through_parsing() -> None:
    """A taint or label from the registry is checked where a template splices it (clm.render.origins)."""
    from clm.model import Cluster

    items = {"taints": "dedicated=a b:NoSchedule", "labels": "dedicated=a b"}
    pool = NodePool("p", "worker-splitaz", 0, 1, ["m5.large"], config_items=items)
    cluster = Cluster("aws:1:eu-central-1:k", "k", "aws:123456789012", "eu-central-1", "zalando-aws", node_pools=[pool])
    seen = registry_view(cluster).node_pools[0]
    value = seen.taints[0]["Value"]
    assert type(value) is RegistryStr and "node_pools[0]" in value.origin
    assert [type(group) for group in zone_distributed_node_pool_groups([seen])] == [RegistryStr]
