"""A drain pass lists pods and budgets while it cordons: the first eviction still waits for the cordon, and the node is
done only by a listing made after the cordon."""

from __future__ import annotations

import time
from typing import Any

from clm.kube.client import KubeClient
from clm.kube.drain import drain_pass
from clm.kube.settings import DrainSettings
from tests.unit.test_kube_client import RecordedTransport, response
from tests.unit.test_kube_eviction import NOW, cordoned_node, recorded_v1
from tests.unit.test_kube_pods import make_pod

EVICTION = "/api/v1/namespaces/app/pods/web-1/eviction"
EMPTY = {"metadata": {"resourceVersion": "100"}, "items": []}


def uncordoned_node() -> dict[str, Any]:
    return {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1", "resourceVersion": "6"}, "spec": {}}


class SlowCordon(RecordedTransport):
    """Answers the node's PATCH slowly, and notes when each request starts and ends."""

    def __init__(self, recordings: dict[tuple[str, str], list]):
        super().__init__(recordings)
        self.times: dict[str, list[float]] = {}

    def send(self, method: str, path: str, *args: Any) -> Any:
        started = time.monotonic()
        if (method, path) == ("PATCH", "/api/v1/nodes/n1"):
            time.sleep(0.2)
        answer = super().send(method, path, *args)
        self.times.setdefault(f"{method} {path}", []).extend([started, time.monotonic()])
        return answer


def node_with(pod_listings: list[dict[str, Any]]) -> SlowCordon:
    base = recorded_v1().recordings
    return SlowCordon(
        {
            **base,
            ("GET", "/api/v1/nodes/n1"): [response(200, uncordoned_node())],
            ("PATCH", "/api/v1/nodes/n1"): [response(200, cordoned_node("2024-01-11T00:00:00Z"))],
            ("GET", "/api/v1/pods"): [response(200, listing) for listing in pod_listings],
            ("GET", "/apis/policy/v1/poddisruptionbudgets"): [response(200, EMPTY)],
            ("POST", EVICTION): [response(201, {"kind": "Status", "status": "Success"})],
        }
    )


def one_pass(transport: RecordedTransport) -> dict[str, Any]:
    return drain_pass(KubeClient(transport, "c1"), "n1", DrainSettings(), now=NOW, budget_seconds=0)


def test_the_first_eviction_waits_for_the_cordon_though_the_listing_went_out_with_it():
    transport = node_with([{**EMPTY, "items": [make_pod("web-1")]}])
    result = one_pass(transport)
    assert result["evicted"] == ["app/web-1"]
    patch_end = transport.times["PATCH /api/v1/nodes/n1"][1]
    assert transport.times["GET /api/v1/pods"][0] < patch_end  # listed meanwhile
    assert transport.times[f"POST {EVICTION}"][0] >= patch_end  # evicted after


def test_a_pod_bound_while_the_cordon_went_out_is_found_before_the_node_is_done():
    transport = node_with([EMPTY, {**EMPTY, "items": [make_pod("web-1")]}])
    result = one_pass(transport)
    assert (result["done"], result["evicted"]) == (False, ["app/web-1"])
    pods_listed = transport.times["GET /api/v1/pods"]
    assert pods_listed[2] >= transport.times["PATCH /api/v1/nodes/n1"][1]  # the second listing: after the cordon


def test_an_empty_node_is_done_after_a_listing_made_with_the_cordon_in_place():
    transport = node_with([EMPTY])
    assert one_pass(transport)["done"] is True
    assert transport.paths("GET").count("/api/v1/pods") == 2
