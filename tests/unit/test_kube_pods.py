"""Drain filters (kubectl drain's, CLM's choice), label selectors and PodDisruptionBudget views."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from clm.kube.budgets import Budget, budgets_for
from clm.kube.pods import (
    DRAIN_FILTERS,
    controller_of,
    has_empty_dir,
    is_ready,
    skip_daemonset,
    skip_finished,
    skip_mirror,
    skip_reason,
    sort_node_pods,
)
from clm.kube.selectors import selector_matches, selector_string

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def make_pod(
    name: str,
    *,
    namespace: str = "app",
    labels: dict[str, str] | None = None,
    created: datetime = T0,
    ready: bool = True,
    owner: str | None = "ReplicaSet",
    phase: str = "Running",
    deleting: datetime | None = None,
    annotations: dict[str, str] | None = None,
    volumes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A pod object as the API serves it."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": labels or {},
        "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "annotations": annotations or {},
    }
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": f"{name}-owner", "controller": True, "uid": "o"}]
    if deleting:
        meta["deletionTimestamp"] = deleting.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "metadata": meta,
        "spec": {"volumes": volumes or []},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def make_pdb(
    name: str,
    selector: dict[str, Any] | None,
    *,
    namespace: str = "app",
    allowed: int = 1,
    healthy: int = 3,
    expected: int = 3,
    desired: int = 2,
    disrupted: int = 0,
    generation: int = 1,
    observed: int = 1,
    api_version: str = "policy/v1beta1",
) -> Budget:
    """A Budget from a PDB object."""
    pdb = {
        "metadata": {"name": name, "namespace": namespace, "generation": generation},
        "spec": {"selector": selector},
        "status": {
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "expectedPods": expected,
            "desiredHealthy": desired,
            "observedGeneration": observed,
            "disruptedPods": {f"p{i}": "2024-05-01T10:00:00Z" for i in range(disrupted)},
        },
    }
    return Budget.from_object(pdb, api_version)


def test_filters_skip_mirror_daemonset_and_finished_pods():
    mirror = make_pod("m", owner="Node", annotations={"kubernetes.io/config.mirror": "abc"})
    daemon = make_pod("d", owner="DaemonSet")
    done = make_pod("j", owner="Job", phase="Succeeded")
    failed = make_pod("f", owner=None, phase="Failed")
    web = make_pod("w")
    assert [skip_mirror(mirror), skip_daemonset(daemon), skip_finished(done), skip_finished(failed)] == [
        "mirror pod",
        "DaemonSet pod",
        "finished (Succeeded)",
        "finished (Failed)",
    ]
    assert [skip_reason(p) for p in (web, make_pod("bare", owner=None))] == [None, None]
    assert skip_reason(mirror, filters=()) is None  # filters compose: none given, nothing skipped
    assert len(DRAIN_FILTERS) == 3


def test_sort_node_pods_separates_terminating_pods():
    pods = [make_pod("w1"), make_pod("w2", deleting=T0), make_pod("d", owner="DaemonSet"), make_pod("bare", owner=None)]
    sorted_pods = sort_node_pods(pods)
    assert [p["metadata"]["name"] for p in sorted_pods.evictable] == ["w1", "bare"]
    assert [p["metadata"]["name"] for p in sorted_pods.terminating] == ["w2"]
    assert [(p["metadata"]["name"], reason) for p, reason in sorted_pods.skipped] == [("d", "DaemonSet pod")]


def test_pod_facts():
    assert controller_of(make_pod("x", owner=None)) is None
    assert controller_of(make_pod("x"))["kind"] == "ReplicaSet"
    assert is_ready(make_pod("x")) and not is_ready(make_pod("x", ready=False))
    assert has_empty_dir(make_pod("x", volumes=[{"name": "tmp", "emptyDir": {}}]))
    assert not has_empty_dir(make_pod("x", volumes=[{"name": "cfg", "configMap": {"name": "c"}}]))


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "y"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}, {"tier": "b"}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]}, {}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {"tier": "a"}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {"tier": ""}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {"tier": ""}, False),
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "v", "operator": "Exists"}]},
            {"app": "web"},
            False,
        ),
        (None, {"app": "web"}, False),
    ],
)
def test_selector_matches(selector, labels, expected):
    assert selector_matches(selector, labels, empty_matches_all=True) is expected


def test_empty_selector_matches_all_in_policy_v1_and_nothing_in_v1beta1():
    assert selector_matches({}, {"a": "b"}, empty_matches_all=True)
    assert not selector_matches({}, {"a": "b"}, empty_matches_all=False)
    pod = make_pod("w", labels={"app": "web"})
    assert budgets_for(pod, [make_pdb("all", {}, api_version="policy/v1")])
    assert not budgets_for(pod, [make_pdb("all", {}, api_version="policy/v1beta1")])


def test_selector_string():
    assert selector_string({"b": "2", "a": "1"}) == "a=1,b=2"


def test_budgets_match_only_their_namespace():
    pod = make_pod("w", labels={"app": "web"})
    budgets = [
        make_pdb("web", {"matchLabels": {"app": "web"}}),
        make_pdb("other", {"matchLabels": {"app": "web"}}, namespace="elsewhere"),
    ]
    assert [b.key for b in budgets_for(pod, budgets)] == ["app/web"]


@pytest.mark.parametrize(
    ("pdb", "blocks", "settling"),
    [
        (make_pdb("p", {}, allowed=1), False, True),  # allowed as listed: a refusal after is another eviction taking it
        (make_pdb("p", {}, allowed=0, healthy=3, expected=3, desired=3), True, False),  # maxUnavailable 0: steady
        (make_pdb("p", {}, allowed=0, healthy=2, expected=3), True, True),  # a replacement is coming up
        (make_pdb("p", {}, allowed=0, healthy=3, expected=3, disrupted=1), True, True),  # an eviction in flight
        (make_pdb("p", {}, allowed=5, generation=2, observed=1), False, True),  # not processed yet
    ],
)
def test_budget_blocks_and_settling(pdb, blocks, settling):
    assert (pdb.blocks, pdb.settling) == (blocks, settling)
    assert pdb.describe().startswith(f"PodDisruptionBudget app/p allows {pdb.disruptions_allowed} disruptions")
