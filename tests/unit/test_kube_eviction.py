"""The policy/v1 eviction path (the sandbox serves only v1beta1), over responses recorded from newer servers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from clm.kube.client import KubeClient
from clm.kube.drain import drain_pass
from clm.kube.errors import DrainError, NodeNotFound
from clm.kube.eviction import BLOCKED, EVICTED, GONE, evict
from clm.kube.nodes import DRAIN_START, LAST_FORCED, LAST_PROGRESS, decommission_taint
from clm.kube.preflight import preflight
from clm.kube.settings import DrainSettings
from clm.timestamps import format_time
from tests.unit.test_kube_client import RecordedTransport, response, status_body
from tests.unit.test_kube_pods import T0, make_pod

NOW = T0 + timedelta(days=10)


def core_resources(eviction_group_version: str | None) -> dict[str, Any]:
    """GET /api/v1 (trimmed to pods); 1.25+ servers name policy/v1 for pods/eviction."""
    eviction = {
        "name": "pods/eviction",
        "singularName": "",
        "namespaced": True,
        "kind": "Eviction",
        "verbs": ["create"],
    }
    if eviction_group_version:
        group, version = eviction_group_version.split("/")
        eviction.update(group=group, version=version)
    return {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {
                "name": "pods",
                "singularName": "",
                "namespaced": True,
                "kind": "Pod",
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            },
            eviction,
        ],
    }


def api_groups(*policy_versions: str) -> dict[str, Any]:
    """GET /apis (trimmed to apps and policy)."""

    def group(name: str, versions: tuple[str, ...]) -> dict[str, Any]:
        listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        return {"name": name, "versions": listed, "preferredVersion": listed[0]}

    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [group("apps", ("v1",)), group("policy", policy_versions)],
    }


def recorded_v1(extra: dict[tuple[str, str], list] | None = None) -> RecordedTransport:
    """A Kubernetes 1.29 server: policy/v1 only."""
    return RecordedTransport(
        {
            ("GET", "/api/v1"): [response(200, core_resources("policy/v1"))],
            ("GET", "/apis"): [response(200, api_groups("v1"))],
            **(extra or {}),
        }
    )


def too_many_requests(pdb: str) -> Any:
    """The 429 a budget answers with (policy/v1 and v1beta1 alike)."""
    return response(
        429,
        status_body(
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget.",
            {
                "causes": [
                    {
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {pdb} needs 2 healthy pods and has 2 currently",
                    }
                ]
            },
        ),
    )


@pytest.mark.parametrize(
    ("core", "groups", "expected_eviction", "expected_pdb"),
    [
        (core_resources("policy/v1"), api_groups("v1"), "policy/v1", "/apis/policy/v1/poddisruptionbudgets"),
        (core_resources("policy/v1"), api_groups("v1", "v1beta1"), "policy/v1", "/apis/policy/v1/poddisruptionbudgets"),
        (
            core_resources("policy/v1beta1"),
            api_groups("v1beta1"),
            "policy/v1beta1",
            "/apis/policy/v1beta1/poddisruptionbudgets",
        ),
        (core_resources(None), api_groups("v1beta1"), "policy/v1beta1", "/apis/policy/v1beta1/poddisruptionbudgets"),
    ],
)
def test_discovery_picks_the_eviction_and_pdb_versions_the_server_offers(core, groups, expected_eviction, expected_pdb):
    discovery = KubeClient(
        RecordedTransport({("GET", "/api/v1"): [response(200, core)], ("GET", "/apis"): [response(200, groups)]})
    ).discovery
    assert discovery.eviction_api_version() == expected_eviction
    assert discovery.pdb_resource().path() == expected_pdb


def test_evict_posts_a_policy_v1_eviction_that_keeps_the_pods_grace_period():
    path = "/api/v1/namespaces/app/pods/web-1/eviction"
    transport = recorded_v1(
        {("POST", path): [response(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})]}
    )
    outcome = evict(KubeClient(transport), make_pod("web-1"), "policy/v1")
    assert outcome.result == EVICTED
    call = transport.calls[-1]
    assert call["body"] == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-1", "namespace": "app"},
    }


@pytest.mark.parametrize(
    ("answer", "result", "pdb", "by_budget"),
    [
        (too_many_requests("web"), BLOCKED, "app/web", True),
        (
            response(
                500,
                status_body(
                    500,
                    "InternalError",
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ),
            ),
            BLOCKED,
            None,
            True,
        ),
        (
            response(
                403,
                status_body(
                    403,
                    "Forbidden",
                    'poddisruptionbudgets.policy "web" is forbidden: pdb disruptions allowed is negative',
                    {"name": "web", "group": "policy", "kind": "poddisruptionbudget"},
                ),
            ),
            BLOCKED,
            "app/web",
            True,
        ),
        (response(503, status_body(503, "ServiceUnavailable", "etcd unavailable")), BLOCKED, None, False),
        (response(404, status_body(404, "NotFound", 'pods "web-1" not found')), GONE, None, True),
    ],
)
def test_eviction_answers(answer, result, pdb, by_budget):
    transport = recorded_v1({("POST", "/api/v1/namespaces/app/pods/web-1/eviction"): [answer]})
    outcome = evict(KubeClient(transport), make_pod("web-1"), "policy/v1")
    assert (outcome.result, outcome.pdb, outcome.by_budget) == (result, pdb, by_budget)
    assert len(transport.paths("POST")) == 1  # never retried inside: the pass is the retry loop


def test_a_forbidden_eviction_is_a_drain_error_naming_the_pod():
    answer = response(
        403,
        status_body(403, "Forbidden", 'pods "web-1" is forbidden: User "clm" cannot create resource "pods/eviction"'),
    )
    transport = recorded_v1({("POST", "/api/v1/namespaces/app/pods/web-1/eviction"): [answer]})
    with pytest.raises(DrainError, match="cluster c1: evicting pod app/web-1: 403 pods"):
        evict(KubeClient(transport, "c1"), make_pod("web-1"), "policy/v1")


def cordoned_node(drain_start: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": "n1",
            "resourceVersion": "7",
            "labels": {"lifecycle-status": "draining"},
            "annotations": {DRAIN_START: drain_start},
        },
        "spec": {"unschedulable": True, "taints": [decommission_taint()]},
    }


def web_pdb(allowed: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "app", "generation": 1},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": allowed,
            "currentHealthy": 3,
            "desiredHealthy": 2,
            "expectedPods": 3,
        },
    }


def node_transport(drain_start: str, pdb_allowed: int, extra: dict[tuple[str, str], list]) -> RecordedTransport:
    pods = [
        make_pod("web-1", labels={"app": "web"}),
        make_pod("web-2", labels={"app": "web"}),
        make_pod("agent", owner="DaemonSet"),
    ]
    return recorded_v1(
        {
            ("GET", "/api/v1/nodes/n1"): [response(200, cordoned_node(drain_start))],
            ("GET", "/api/v1/pods"): [
                response(200, {"kind": "PodList", "metadata": {"resourceVersion": "100"}, "items": pods})
            ],
            ("GET", "/apis/policy/v1/poddisruptionbudgets"): [
                response(
                    200,
                    {
                        "kind": "PodDisruptionBudgetList",
                        "metadata": {"resourceVersion": "100"},
                        "items": [web_pdb(pdb_allowed)],
                    },
                )
            ],
            **extra,
        }
    )


def test_drain_pass_evicts_through_policy_v1_and_reports_the_budget_that_blocks():
    """The budget as listed allows 2 (a listing older than another drain's eviction); the server refuses one."""
    transport = node_transport(
        "2024-05-11T09:00:00Z",
        2,
        {
            ("POST", "/api/v1/namespaces/app/pods/web-1/eviction"): [response(201, {"kind": "Status", "code": 201})],
            ("POST", "/api/v1/namespaces/app/pods/web-2/eviction"): [too_many_requests("web")],
            ("PATCH", "/api/v1/nodes/n1"): [response(200, cordoned_node("2024-05-11T09:00:00Z"))],
        },
    )
    result = drain_pass(KubeClient(transport, "c1"), "n1", DrainSettings(), now=NOW, budget_seconds=0)
    assert result["done"] is False
    assert result["evicted"] == ["app/web-1"] and result["forced"] == []
    assert [(b["pod"], b["pdb"]) for b in result["blocked"]] == [("app/web-2", "app/web")]
    reason = result["blocked"][0]["reason"]
    assert "needs 2 healthy pods" in reason and "drain grace period 6h since 2024-05-11T09:00:00Z" in reason
    assert result["drain_start"] == "2024-05-11T09:00:00Z"
    [progress] = [c["body"] for c in transport.calls if c["method"] == "PATCH"]  # already cordoned: only this
    assert progress == {"metadata": {"annotations": {LAST_PROGRESS: format_time(NOW)}}}
    assert {c["body"]["apiVersion"] for c in transport.calls if c["method"] == "POST"} == {"policy/v1"}
    assert 1 <= result["wait_seconds"] <= 30


def test_drain_pass_forces_a_blocked_pod_when_the_rules_allow_and_records_it_first():
    settings = DrainSettings(grace_period=60, min_pod_lifetime=60, min_healthy_sibling_lifetime=60)
    forced_node = cordoned_node("2024-05-01T09:00:00Z")
    transport = node_transport(
        "2024-05-01T09:00:00Z",
        0,
        {
            ("PATCH", "/api/v1/nodes/n1"): [response(200, forced_node)],
            ("GET", "/api/v1/namespaces/app/pods"): [
                response(
                    200, {"items": [make_pod("web-1", labels={"app": "web"}), make_pod("web-2", labels={"app": "web"})]}
                )
            ],
            ("DELETE", "/api/v1/namespaces/app/pods/web-1"): [response(200, make_pod("web-1"))],
        },
    )
    result = drain_pass(KubeClient(transport, "c1"), "n1", settings, now=NOW, budget_seconds=0)
    assert result["forced"] == ["app/web-1"]
    assert transport.paths("POST") == []  # the budget allows nothing: no eviction asked
    methods = [(c["method"], c["path"]) for c in transport.calls if c["method"] in ("PATCH", "DELETE")]
    node, pod = ("PATCH", "/api/v1/nodes/n1"), ("DELETE", "/api/v1/namespaces/app/pods/web-1")
    assert methods == [node, pod, node]  # recorded first, so a crash never loses the interval; then the progress
    patch = next(c for c in transport.calls if c["method"] == "PATCH")
    assert patch["body"]["metadata"]["annotations"] == {LAST_FORCED: "2024-05-11T10:00:01Z"}  # rounded up
    assert patch["body"]["metadata"]["resourceVersion"] == "7"
    delete = next(c for c in transport.calls if c["method"] == "DELETE")
    assert delete["body"] == {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "uid-web-1"}}
    # The interval rule now holds back the second pod, and says until when.
    assert [b["pod"] for b in result["blocked"]] == ["app/web-2"]
    assert (
        "force-evict interval 5m since the last forced deletion at 2024-05-11T10:00:01Z"
        in result["blocked"][0]["reason"]
    )


def test_preflight_names_pods_several_budgets_cover():
    second = {**web_pdb(1), "metadata": {"name": "web-too", "namespace": "app", "generation": 1}}
    transport = node_transport("2024-05-11T09:00:00Z", 1, {})
    transport.recordings[("GET", "/apis/policy/v1/poddisruptionbudgets")] = [
        response(200, {"metadata": {"resourceVersion": "1"}, "items": [web_pdb(1), second]})
    ]
    plan = preflight(KubeClient(transport), "n1")
    assert plan["evictable"] == 2 and plan["warnings"] == []
    assert plan["blockers"][0] == {
        "pod": "app/web-1",
        "pdb": "app/web",
        "reason": "covered by several PodDisruptionBudgets (app/web, app/web-too): the eviction API refuses it",
    }
    with pytest.raises(NodeNotFound, match="node n2 does not exist"):
        preflight(KubeClient(transport), "n2")


def test_a_pass_sends_no_more_evictions_than_the_budget_allows_as_listed():
    """Allowed 1 with two pods: one eviction goes out; the other pod waits for the budget, with no refused request
    (a batch's drains, and the two pods of one node, would otherwise spend the apiserver's time on 429s)."""
    transport = node_transport(
        "2024-05-11T09:00:00Z",
        1,
        {
            ("POST", "/api/v1/namespaces/app/pods/web-1/eviction"): [response(201, {"kind": "Status", "code": 201})],
            ("PATCH", "/api/v1/nodes/n1"): [response(200, cordoned_node("2024-05-11T09:00:00Z"))],
        },
    )
    result = drain_pass(KubeClient(transport, "c1"), "n1", DrainSettings(), now=NOW, budget_seconds=0)
    assert result["evicted"] == ["app/web-1"]
    assert [(b["pod"], b["pdb"]) for b in result["blocked"]] == [("app/web-2", "app/web")]
    assert "allows 1 disruptions" in result["blocked"][0]["reason"]
    assert "1 taken by other evictions meanwhile" in result["blocked"][0]["reason"]
    posted = [c["path"] for c in transport.calls if c["method"] == "POST"]
    assert posted == ["/api/v1/namespaces/app/pods/web-1/eviction"]
