"""Karpenter pools' objects: applied labelled with their pool after the cluster's manifests, only when
`karpenter_pools_enabled` is "true"; the NodePools/EC2NodeClasses CLM applied for removed pools deleted, others kept."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace
from typing import Any

import pytest

from clm.kube.client import KubeClient
from clm.kube.errors import ApplyError
from clm.kube.karpenter import POOL_LABEL, applied_by_clm, apply_pools, delete_pool, labelled, prune_pools
from clm.render.manifests import Manifest
from clm.workflow import kube_steps
from clm.workflow.render_step import APPLY_PHASES
from tests.unit.test_kube_client import RecordedTransport, response, status_body

FILE = "cluster/node-pools/worker-karpenter/provisioners.yaml"
GROUPS = {
    "groups": [
        {"name": "karpenter.sh", "versions": [{"version": "v1"}]},
        {"name": "karpenter.k8s.aws", "versions": [{"version": "v1"}]},
    ]
}
RESOURCES = {
    ("GET", "/apis/karpenter.sh/v1"): [
        response(200, {"resources": [{"name": "nodepools", "kind": "NodePool", "namespaced": False}]})
    ],
    ("GET", "/apis/karpenter.k8s.aws/v1"): [
        response(200, {"resources": [{"name": "ec2nodeclasses", "kind": "EC2NodeClass", "namespaced": False}]})
    ],
}


def objects(pool: str) -> list[Manifest]:
    """A pool's rendered EC2NodeClass and NodePool (named after the pool, as Zalando's provisioners.yaml)."""
    nodeclass = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": pool}}
    nodepool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": pool, "labels": {"a": "b"}}}
    return [Manifest(FILE, 1, 2, nodeclass), Manifest(FILE, 2, 30, nodepool)]


def listed(kind: str, *items: tuple[str, str | None]) -> Any:
    """A list answer: (name, pool label or None)."""
    return response(
        200,
        {
            "items": [
                {"kind": kind, "metadata": {"name": name, "labels": {POOL_LABEL: pool} if pool else {}}}
                for name, pool in items
            ]
        },
    )


def test_labelled_adds_the_pool_label_and_keeps_the_others():
    manifest = labelled(objects("karp")[1], "karp")
    assert manifest.body["metadata"]["labels"] == {"a": "b", POOL_LABEL: "karp"}
    assert objects("karp")[1].body["metadata"]["labels"] == {"a": "b"}


def test_pools_are_applied_in_order_labelled_server_side():
    transport = RecordedTransport(
        {
            **RESOURCES,
            ("PATCH", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/p1"): [response(201, {})],
            ("PATCH", "/apis/karpenter.sh/v1/nodepools/p1"): [response(201, {})],
            ("PATCH", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/p2"): [response(200, {})],
            ("PATCH", "/apis/karpenter.sh/v1/nodepools/p2"): [response(200, {})],
        }
    )
    report = apply_pools(KubeClient(transport, "c1"), {"p1": objects("p1"), "empty": [], "p2": objects("p2")})
    assert report.done and report.count("created") == 2 and report.count("configured") == 2
    patches = [call for call in transport.calls if call["method"] == "PATCH"]
    assert [call["path"].rsplit("/", 2)[1:] for call in patches] == [
        ["ec2nodeclasses", "p1"],
        ["nodepools", "p1"],
        ["ec2nodeclasses", "p2"],
        ["nodepools", "p2"],
    ]
    assert all(call["query"]["fieldManager"] == "clm" for call in patches)
    assert [call["body"]["metadata"]["labels"][POOL_LABEL] for call in patches] == ["p1", "p1", "p2", "p2"]


def test_a_refused_object_names_cluster_pool_and_object_and_stops():
    refused = response(422, status_body(422, "Invalid", "spec.template: Required value"))
    transport = RecordedTransport(
        {
            **RESOURCES,
            ("PATCH", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/p1"): [response(201, {})],
            ("PATCH", "/apis/karpenter.sh/v1/nodepools/p1"): [refused],
        }
    )
    with pytest.raises(ApplyError) as raised:
        apply_pools(KubeClient(transport, "c1"), {"p1": objects("p1"), "p2": objects("p2")})
    message = str(raised.value)
    assert message.startswith("cluster c1: Karpenter node pool 'p1': ")
    assert f"{FILE} document 2 (line 30): NodePool p1: 422" in message
    assert not [path for path in transport.paths("PATCH") if path.endswith("/p2")]


def test_an_api_server_unavailable_mid_apply_stays_transient_for_the_step_to_be_retried():
    """A 503 (or no answer) after the client's retries is an ApplyError naming pool and object that is transient:
    the handler raises it as TransientError, which the state machine retries (applying again is idempotent)."""
    unavailable = response(503, status_body(503, "ServiceUnavailable", "etcd leader changed"))
    transport = RecordedTransport(
        {**RESOURCES, ("PATCH", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/p1"): [unavailable]}
    )
    with pytest.raises(ApplyError, match=r"Karpenter node pool 'p1': .*503") as raised:
        apply_pools(KubeClient(transport, "c1"), {"p1": objects("p1")})
    assert raised.value.transient


NODES = ("GET", "/api/v1/nodes")


def karpenter_nodes(*pools: str) -> Any:
    return response(200, {"items": [{"metadata": {"labels": {"karpenter.sh/nodepool": p}}} for p in pools]})


def test_prune_deletes_only_labelled_objects_of_removed_pools():
    transport = RecordedTransport(
        {
            ("GET", "/apis"): [response(200, GROUPS)],
            **RESOURCES,
            NODES: [karpenter_nodes("keep")],
            ("GET", "/apis/karpenter.sh/v1/nodepools"): [listed("NodePool", ("keep", "keep"), ("gone", "gone"))],
            ("GET", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses"): [listed("EC2NodeClass", ("gone", "gone"))],
            ("DELETE", "/apis/karpenter.sh/v1/nodepools/gone"): [response(200, {})],
            ("DELETE", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/gone"): [response(200, {})],
        }
    )
    deleted, limited = prune_pools(KubeClient(transport, "c1"), {"keep"})
    assert (deleted, limited) == (["NodePool gone", "EC2NodeClass gone"], [])
    lists = [call for call in transport.calls if call["path"].endswith(("nodepools", "ec2nodeclasses"))]
    assert all(call["query"] == {"labelSelector": POOL_LABEL} for call in lists)
    assert transport.paths("DELETE") == [
        "/apis/karpenter.sh/v1/nodepools/gone",
        "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/gone",
    ]


def test_a_removed_pool_with_running_nodes_is_limited_not_deleted_until_the_roll_drains_it():
    transport = RecordedTransport(
        {
            ("GET", "/apis"): [response(200, GROUPS)],
            **RESOURCES,
            NODES: [karpenter_nodes("gone")],
            ("GET", "/apis/karpenter.sh/v1/nodepools"): [listed("NodePool", ("gone", "gone"))],
            ("GET", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses"): [listed("EC2NodeClass", ("gone-class", "gone"))],
            ("PATCH", "/apis/karpenter.sh/v1/nodepools/gone"): [response(200, {})],
        }
    )
    assert prune_pools(KubeClient(transport, "c1"), set()) == ([], ["NodePool gone"])
    assert transport.paths("DELETE") == []  # neither the NodePool nor its class, while the nodes run
    [patch] = [call for call in transport.calls if call["method"] == "PATCH"]
    assert patch["body"] == {"spec": {"limits": {"cpu": "0"}}}  # Karpenter launches nothing more for it


def test_after_the_drain_the_pools_objects_are_deleted_and_only_clms():
    transport = RecordedTransport(
        {
            ("GET", "/apis"): [response(200, GROUPS)],
            **RESOURCES,
            ("GET", "/apis/karpenter.sh/v1/nodepools"): [listed("NodePool", ("gone", "gone")), listed("NodePool")],
            ("GET", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses"): [listed("EC2NodeClass", ("gone-class", "gone"))],
            ("DELETE", "/apis/karpenter.sh/v1/nodepools/gone"): [response(404, status_body(404, "NotFound", "gone"))],
            ("DELETE", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/gone-class"): [response(200, {})],
        }
    )
    kube = KubeClient(transport, "c1")
    assert delete_pool(kube, "gone") == ["NodePool gone", "EC2NodeClass gone-class"]  # a 404: gone already
    lists = [call["query"] for call in transport.calls if call["path"].endswith(("nodepools", "ec2nodeclasses"))]
    assert lists == [{"labelSelector": f"{POOL_LABEL}=gone"}] * 2
    assert not applied_by_clm(kube, "foreign")  # the second NodePool listing: none labelled for it


def test_prune_skips_kinds_the_cluster_does_not_serve():
    transport = RecordedTransport({("GET", "/apis"): [response(200, {"groups": []})]})
    assert prune_pools(KubeClient(transport, "c1"), set()) == ([], [])
    assert transport.paths("DELETE") == []


def rendered(pools: dict[str, list[Manifest]]) -> SimpleNamespace:
    cluster = SimpleNamespace(karpenter_pools=[SimpleNamespace(name=name) for name in pools])
    return SimpleNamespace(cluster=cluster, node_pool_manifests=pools)


def test_the_karpenter_phase_comes_after_the_cluster_manifests():
    assert APPLY_PHASES[-1] == "karpenter_pools"
    assert APPLY_PHASES.index("manifests") < APPLY_PHASES.index("karpenter_pools")


@pytest.mark.parametrize("pools", [{"p1": objects("p1"), "p2": []}, {}])
def test_the_phase_applies_then_prunes_the_registry_pools(monkeypatch, pools):
    """At every run, with or without Karpenter pools in the registry, as CLM's Reconcile since 66f2c05."""
    calls: list[tuple[str, Any]] = []
    kube = object()
    monkeypatch.setattr(kube_steps, "rendering", lambda key: rendered(pools))
    monkeypatch.setattr(kube_steps, "kube_client", lambda cluster, where=None: nullcontext(kube))

    def fake_apply(client, pools):
        calls.append(("apply", pools))
        from clm.kube.apply import ApplyReport

        return ApplyReport(dry_run=False)

    monkeypatch.setattr("clm.kube.karpenter.apply_pools", fake_apply)
    monkeypatch.setattr(
        "clm.kube.karpenter.prune_pools", lambda client, keep: calls.append(("prune", keep)) or ([], [])
    )
    result = kube_steps.apply({"phase": "karpenter_pools", "rendering": "r"})
    assert [name for name, _ in calls] == ["apply", "prune"]
    assert list(calls[0][1]) == list(pools) and calls[1][1] == set(pools)
    assert result["done"] and result["deleted"] == [] and result["limited"] == []


def test_nothing_is_deleted_while_the_pools_wait_for_a_crd(monkeypatch):
    monkeypatch.setattr(kube_steps, "rendering", lambda key: rendered({"p1": objects("p1")}))
    monkeypatch.setattr(kube_steps, "kube_client", lambda cluster, where=None: nullcontext(object()))
    from clm.kube.apply import ApplyReport

    waiting = ApplyReport(dry_run=False, waiting_for="CustomResourceDefinition x to be established and served")
    monkeypatch.setattr("clm.kube.karpenter.apply_pools", lambda client, pools: waiting)
    monkeypatch.setattr("clm.kube.karpenter.prune_pools", lambda client, keep: pytest.fail("pruned too early"))
    result = kube_steps.apply({"phase": "karpenter_pools", "rendering": "r"})
    assert not result["done"] and result["wait_seconds"] > 0 and result["deleted"] == []
