"""`clm registry set` and `clm registry delete` on in-process moto, and the field edits behind `set`."""

from __future__ import annotations

import json

import pytest
import yaml

from clm.cli.errors import CliError
from clm.cli.main import describe_error
from clm.cli.registry_edit import changes, edit_spec, flatten, parse_assignment
from clm.model import Problem
from tests.unit.test_cli_helpers import KUBE_1, KUBE_2, clm  # noqa: F401  (the `clm` fixture)


@pytest.fixture
def run(clm):  # noqa: F811
    return clm[0]


@pytest.fixture
def store(clm):  # noqa: F811
    return clm[1]


def test_set_changes_fields_at_every_depth_with_their_types(run, store):
    store.record_problem(KUBE_1, Problem(title="kept"))
    result = run(
        "-o",
        "json",
        "registry",
        "set",
        KUBE_1,
        "lifecycle_status=ready",
        "config_items.kube_auth_secret=clm/kube-1",
        "node_pools.default-worker.max_size=5",
        "node_pools.default-worker.config_items.surge=1",
        "criticality_level=3",
    )
    assert json.loads(result.output) == [
        {"field": "config_items.kube_auth_secret", "before": None, "after": "clm/kube-1"},
        {"field": "criticality_level", "before": 1, "after": 3},
        {"field": "lifecycle_status", "before": "requested", "after": "ready"},
        {"field": "node_pools.default-worker.config_items.surge", "before": None, "after": "1"},
        {"field": "node_pools.default-worker.max_size", "before": 6, "after": 5},
    ]
    cluster = store.get(KUBE_1)
    assert cluster.lifecycle_status == "ready"
    assert cluster.config_items == {"app_replicas": "3", "drain_grace_period": "6h", "kube_auth_secret": "clm/kube-1"}
    assert (cluster.node_pools[0].max_size, cluster.node_pools[0].config_items["surge"]) == (5, "1")
    assert cluster.criticality_level == 3
    assert [p.title for p in cluster.status.problems] == ["kept"]  # status is never written by `set`


def test_dry_run_shows_before_and_after_and_writes_nothing(run, store):
    result = run("registry", "set", KUBE_2, "node_pools.batch.max_size=20", "--dry-run")
    assert f"would change 1 field(s) of {KUBE_2}" in " ".join(result.output.split())
    assert ["node_pools.batch.max_size", "10", "20"] in [line.split() for line in result.output.splitlines()]
    assert store.get(KUBE_2).node_pool("batch").max_size == 10


def test_unset_removes_a_config_item_and_instance_types_replace_the_legacy_field(run, store):
    run("registry", "set", KUBE_1, "config_items.cluster_update_block=incident-42")
    assert store.get(KUBE_1).update_blocked
    run("registry", "set", KUBE_1, "--unset", "config_items.cluster_update_block")
    assert not store.get(KUBE_1).update_blocked
    run("registry", "set", KUBE_2, "node_pools.default-worker.instance_types=m5.xlarge, m5a.xlarge")
    pool = store.get(KUBE_2).node_pool("default-worker")
    assert (pool.instance_types, pool.legacy_instance_type) == (["m5.xlarge", "m5a.xlarge"], False)
    exported = yaml.safe_load(run("registry", "show", KUBE_2).output)["node_pools"][0]
    assert "instance_type" not in exported


def test_unchanged_values_write_nothing(run, store):
    result = run("-o", "json", "registry", "set", KUBE_1, "node_pools.default-worker.max_size=6")
    assert json.loads(result.output) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["node_pools.default-worker.min_size=9"],
            f"clm registry set {KUBE_1}: cluster {KUBE_1}: node_pools[0].min_size: must be <= max_size (9 > 6)",
        ),
        (
            ["lifecycle_status=gone"],
            f"cluster {KUBE_1}: lifecycle_status: 'gone' is not one of requested, creating, ready, "
            "decommission-requested, decommissioned",
        ),
        (["criticality_level=high"], "criticality_level: must be an integer, got 'high'"),
        (["node_pools.default-worker.max_size=lots"], "node_pools[0].max_size: must be an integer, got 'lots'"),
        (["lifecycle=ready"], "lifecycle: unknown field"),
        (["node_pools.gpu.max_size=2"], f"cluster {KUBE_1} has no node pool 'gpu' (node pools: default-worker)"),
        (["id=aws:1:x"], f"cluster {KUBE_1}: cannot set id: the id names the cluster; it cannot be changed"),
        (["config_items=x"], "cannot set config_items: set one config item: config_items.NAME=VALUE"),
        (["status.next_version=x"], "cannot set status.next_version: status is CLM's record of its runs"),
        (["node_pools.default-worker.name=x"], "cannot set node_pools.default-worker.name: the name names the pool"),
        (["max_size"], "'max_size' is not FIELD=VALUE"),
        (["--unset", "config_items.nothing"], f"cluster {KUBE_1}: cannot unset config_items.nothing: it is not set"),
        ([], "nothing to change: give FIELD=VALUE or --unset FIELD"),
    ],
)
def test_invalid_edits_name_the_field_and_write_nothing(run, store, args, message):
    before = store.get(KUBE_1).to_dict()
    result = run("registry", "set", KUBE_1, *args, ok=False)
    assert result.exit_code != 0
    assert message in describe_error(result.exception)
    assert store.get(KUBE_1).to_dict() == before


def test_set_of_an_unknown_cluster(run):
    result = run("registry", "set", "aws:1:nowhere", "alias=x", ok=False)
    assert describe_error(result.exception) == "cluster aws:1:nowhere is not in the registry"


def test_delete_refuses_a_cluster_that_is_not_decommissioned(run, store):
    result = run("registry", "delete", KUBE_1, "--yes", ok=False)
    assert describe_error(result.exception) == (
        f"cluster {KUBE_1} is requested, not decommissioned: its stacks may still exist; "
        f"run `clm decommission {KUBE_1}` first, or pass --force"
    )
    assert store.get(KUBE_1).id == KUBE_1


def test_delete_asks_for_confirmation(run, store):
    store.record_decommissioned(KUBE_1)
    declined = run("registry", "delete", KUBE_1, ok=False, input="n\n")
    assert declined.exit_code == 1 and "Delete cluster" in declined.output
    assert store.get(KUBE_1).lifecycle_status == "decommissioned"
    run("registry", "delete", KUBE_1, input="y\n")
    assert [c.id for c in store.list_clusters()] == [KUBE_2]


def test_delete_force_removes_a_live_and_locked_cluster(run, store):
    store.acquire_lock(KUBE_2, "arn:aws:states:eu-central-1:123456789012:execution:clm-provision:x", lambda _: True)
    run("registry", "delete", KUBE_2, "--force", "--yes")
    assert [c.id for c in store.list_clusters()] == [KUBE_1]


def test_edit_spec_paths_and_changes():
    spec = {
        "id": "c",
        "config_items": {"a.b": "1"},
        "node_pools": [{"name": "p", "instance_type": "m5.large", "min_size": 1, "config_items": {}}],
    }
    edited = edit_spec(
        spec,
        [parse_assignment("config_items.a.b=2"), parse_assignment("node_pools.p.instance_types=c5.large")],
        ["node_pools.p.min_size"],
        "c",
    )
    assert edited["config_items"] == {"a.b": "2"}
    assert edited["node_pools"][0] == {"name": "p", "instance_types": ["c5.large"], "config_items": {}}
    assert spec["config_items"] == {"a.b": "1"}  # the input is left as it was
    assert flatten(edited) == {"id": "c", "config_items.a.b": "2", "node_pools.p.instance_types": ["c5.large"]}
    assert changes(spec, edited) == [
        {"field": "config_items.a.b", "before": "1", "after": "2"},
        {"field": "node_pools.p.instance_type", "before": "m5.large", "after": None},
        {"field": "node_pools.p.instance_types", "before": None, "after": ["c5.large"]},
        {"field": "node_pools.p.min_size", "before": 1, "after": None},
    ]
    assert parse_assignment("alias=a=b") == ("alias", "a=b")
    with pytest.raises(CliError, match=r"cannot set node_pools\.p: give one field of the pool"):
        edit_spec(spec, [("node_pools.p", "x")], [], "c")
