"""Cluster versions: CLM's spec hash, what it covers and what it leaves out."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from clm.model import Cluster, NodePool, Problem
from clm.version import ClusterVersion, desired_version, needs_update, spec_hash
from tests.strategies import clusters

EXAMPLE = Cluster(
    id="aws:123456789012:eu-central-1:kube-1",
    local_id="kube-1",
    infrastructure_account="aws:123456789012",
    region="eu-central-1",
    provider="zalando-aws",
    lifecycle_status="ready",
    criticality_level=1,
    config_items={"b": "2", "a": "1"},
    node_pools=[NodePool("default", "worker-default", 1, 3, ["m5.large"])],
)
# Golden value, derived by hand from CLM's byte layout (id, account, local_id, url, channel, environment,
# int32 LE criticality, lifecycle, provider, region, sorted items; per pool name, profile, types, discount,
# int64 LE min/max, items). A change here would roll every cluster of every fleet.
EXAMPLE_HASH = "Ru9POqU4nigZISTq9YfxBn1gN2E"

CLUSTER_CHANGES = {
    "id": lambda c: dataclasses.replace(c, id=c.id + "x"),
    "infrastructure_account": lambda c: dataclasses.replace(
        c, infrastructure_account="aws:" + ("0" if c.account_id[0] != "0" else "1") + c.account_id[1:]
    ),
    "local_id": lambda c: dataclasses.replace(c, local_id=c.local_id + "x"),
    "api_server_url": lambda c: dataclasses.replace(c, api_server_url=c.api_server_url + "/y"),
    "channel": lambda c: dataclasses.replace(c, channel=(c.channel or "") + "z"),
    "environment": lambda c: dataclasses.replace(c, environment=c.environment + "e"),
    "criticality_level": lambda c: dataclasses.replace(c, criticality_level=c.criticality_level + 1),
    "lifecycle_status": lambda c: dataclasses.replace(
        c, lifecycle_status="ready" if c.lifecycle_status != "ready" else "requested"
    ),
    "provider": lambda c: dataclasses.replace(c, provider=c.provider + "-x"),
    "region": lambda c: dataclasses.replace(c, region="sa-east-1" if c.region != "sa-east-1" else "us-east-2"),
    "config_items (added)": lambda c: dataclasses.replace(c, config_items={**c.config_items, "new-key": "v"}),
    "node_pools (added)": lambda c: dataclasses.replace(
        c, node_pools=[*c.node_pools, NodePool("extra-pool", "p", 0, 1, ["m5.large"])]
    ),
}
POOL_CHANGES = {
    "name": lambda p: dataclasses.replace(p, name=p.name + "x"),
    "profile": lambda p: dataclasses.replace(p, profile=p.profile + "x"),
    "instance_types": lambda p: dataclasses.replace(p, instance_types=[*p.instance_types, "t3.nano"]),
    "discount_strategy": lambda p: dataclasses.replace(
        p, discount_strategy="spot" if p.discount_strategy != "spot" else "none"
    ),
    "min_size": lambda p: dataclasses.replace(p, min_size=p.min_size + 1, max_size=p.max_size + 1),
    "max_size": lambda p: dataclasses.replace(p, max_size=p.max_size + 1),
    "config_items": lambda p: dataclasses.replace(p, config_items={**p.config_items, "new-key": "v"}),
}
EXCLUDED = {
    "alias": lambda c: dataclasses.replace(c, alias=c.alias + "renamed"),
    "owner": lambda c: dataclasses.replace(c, owner=(c.owner or "") + "other-team"),
    "account_name": lambda c: dataclasses.replace(c, account_name="renamed"),
    "created_at": lambda c: dataclasses.replace(c, created_at="2020-01-01T00:00:00Z"),
    "status": lambda c: dataclasses.replace(
        c, status=dataclasses.replace(c.status, current_version="x#y", problems=[Problem("boom")])
    ),
    "legacy_instance_type": lambda c: dataclasses.replace(
        c, node_pools=[dataclasses.replace(p, legacy_instance_type=not p.legacy_instance_type) for p in c.node_pools]
    ),
}


def test_golden_hash_is_stable():
    assert spec_hash(EXAMPLE) == EXAMPLE_HASH
    assert str(desired_version(EXAMPLE, "abc123")) == f"abc123#{EXAMPLE_HASH}"


def test_hash_is_the_same_in_another_process_with_another_hash_seed():
    code = (
        "from clm.model import *; from clm.version import spec_hash; "
        "print(spec_hash(Cluster(id='aws:123456789012:eu-central-1:kube-1', local_id='kube-1', "
        "infrastructure_account='aws:123456789012', region='eu-central-1', provider='zalando-aws', "
        "lifecycle_status='ready', criticality_level=1, config_items={'b': '2', 'a': '1'}, "
        "node_pools=[NodePool('default', 'worker-default', 1, 3, ['m5.large'])])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert out.stdout.strip() == EXAMPLE_HASH


def test_config_item_order_does_not_matter():
    reordered = dataclasses.replace(EXAMPLE, config_items={"a": "1", "b": "2"})
    assert spec_hash(reordered) == EXAMPLE_HASH


@given(clusters(), st.sampled_from(sorted(CLUSTER_CHANGES)))
def test_changing_a_hashed_cluster_field_changes_the_version(cluster, field):
    assert spec_hash(CLUSTER_CHANGES[field](cluster)) != spec_hash(cluster)


@given(clusters(), st.sampled_from(sorted(POOL_CHANGES)), st.data())
def test_changing_a_hashed_node_pool_field_changes_the_version(cluster, field, data):
    if not cluster.node_pools:
        cluster = dataclasses.replace(cluster, node_pools=[NodePool("p", "q", 0, 1, ["m5.large"])])
    index = data.draw(st.integers(0, len(cluster.node_pools) - 1))
    pools = list(cluster.node_pools)
    pools[index] = POOL_CHANGES[field](pools[index])
    assert spec_hash(dataclasses.replace(cluster, node_pools=pools)) != spec_hash(cluster)


@given(clusters(), st.sampled_from(sorted(EXCLUDED)))
def test_changing_an_excluded_field_keeps_the_version(cluster, field):
    assert spec_hash(EXCLUDED[field](cluster)) == spec_hash(cluster)


def test_version_parse_and_needs_update():
    version = desired_version(EXAMPLE, "cfg1")
    assert ClusterVersion.parse(str(version)) == version
    assert ClusterVersion.parse("") is None
    assert needs_update(EXAMPLE, "cfg1")
    current = dataclasses.replace(EXAMPLE, status=dataclasses.replace(EXAMPLE.status, current_version=str(version)))
    assert not needs_update(current, "cfg1")
    assert needs_update(current, "cfg2")
