"""clm.kube.health: what a rollout's health gate finds wrong in a cluster's API objects: nodes not Ready, workloads
of the gate's namespaces (and those it names) without their wanted pods updated and available."""

from __future__ import annotations

from typing import Any

from clm.kube.health import LIST_LIMIT, findings


class Api:
    """Lists by path (each page of `pages[path]` in turn), objects by path; records the queries."""

    def __init__(self, lists: dict[str, list[list[dict]]], objects: dict[str, dict] | None = None) -> None:
        self.lists, self.objects, self.queries = lists, objects or {}, []

    def get(self, path: str, query: dict[str, Any] | None = None) -> dict[str, Any] | None:
        self.queries.append((path, query))
        if path not in self.lists:
            return self.objects.get(path)
        pages = self.lists[path]
        index = int((query or {}).get("continue") or 0)
        more = {"continue": str(index + 1)} if index + 1 < len(pages) else {}
        return {"items": pages[index], "metadata": more}


def node(name: str, ready: str = "True", reason: str = "") -> dict:
    condition = {"type": "Ready", "status": ready, **({"reason": reason} if reason else {})}
    return {"metadata": {"name": name}, "status": {"conditions": [{"type": "MemoryPressure"}, condition]}}


def deployment(name: str, replicas: int, available: int, updated: int | None = None, generation: int = 1) -> dict:
    status = {"observedGeneration": 1, "availableReplicas": available, "updatedReplicas": available}
    if updated is not None:
        status["updatedReplicas"] = updated
    return {
        "metadata": {"name": name, "namespace": "kube-system", "generation": generation},
        "spec": {"replicas": replicas},
        "status": status,
    }


def daemonset(name: str, desired: int, available: int, on_delete: bool = False) -> dict:
    spec = {"updateStrategy": {"type": "OnDelete"}} if on_delete else {}
    status = {"desiredNumberScheduled": desired, "numberAvailable": available, "updatedNumberScheduled": 0}
    return {"metadata": {"name": name, "namespace": "kube-system"}, "spec": spec, "status": status}


APPS = "/apis/apps/v1/namespaces/kube-system"


def test_a_healthy_cluster_has_no_finding_and_every_list_is_paged():
    api = Api({
        "/api/v1/nodes": [[node("a")], [node("b")]],
        f"{APPS}/deployments": [[deployment("coredns", 2, 2)]],
        f"{APPS}/daemonsets": [[daemonset("kube-proxy", 2, 2, on_delete=True)]],
    })  # fmt: skip
    assert findings(api, ["kube-system"], []) == []
    assert ("/api/v1/nodes", {"limit": LIST_LIMIT, "continue": "1"}) in api.queries


def test_nodes_not_ready_and_workloads_not_available_are_each_named():
    api = Api({
        "/api/v1/nodes": [[node("a"), node("b", "Unknown", "NodeStatusUnknown"), {"metadata": {"name": "c"}}]],
        f"{APPS}/deployments": [[
            deployment("coredns", 2, 1),
            deployment("metrics", 1, 1, updated=0),  # an old pod available, the new one not yet
            deployment("gen", 1, 1, generation=2),  # its controller has not seen the new spec
            {"metadata": {"name": "one", "namespace": "kube-system"}, "spec": {}, "status": {}},  # replicas: 1
        ]],
        f"{APPS}/statefulsets": [[{"metadata": {"name": "db", "namespace": "kube-system"}, "spec": {"replicas": 3},
                                   "status": {"readyReplicas": 3, "updatedReplicas": 2}}]],
        f"{APPS}/daemonsets": [[daemonset("proxy", 3, 2)]],
    })  # fmt: skip
    assert findings(api, ["kube-system"], []) == [
        "node b not Ready (NodeStatusUnknown)",
        "node c not Ready",
        "Deployment kube-system/coredns: 1 of 2 pods updated and available",
        "Deployment kube-system/metrics: 0 of 1 pods updated and available",
        "Deployment kube-system/gen: its controller has not seen its latest spec",
        "Deployment kube-system/one: 0 of 1 pods updated and available",
        "StatefulSet kube-system/db: 2 of 3 pods updated and available",
        "DaemonSet kube-system/proxy: 0 of 3 pods updated and available",
    ]


def test_named_workloads_are_read_one_by_one_and_a_missing_one_is_a_finding():
    path = "/apis/apps/v1/namespaces/team/deployments/api"
    api = Api({}, {path: {**deployment("api", 2, 2), "metadata": {"name": "api", "namespace": "team"}}})
    assert findings(api, [], ["team/deployment/api", "team/statefulset/gone"]) == ["team/statefulset/gone not found"]
