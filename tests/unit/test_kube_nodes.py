"""Node marks: cordon, taint_for_replacement, hand_over and take_back write CLM's label, taint, clocks and drainer in
one conflict-safe patch."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from clm.kube.client import MERGE_PATCH, KubeClient
from clm.kube.errors import DrainError, NodeNotFound
from clm.kube.nodes import (
    DRAIN_START,
    DRAINED_BY,
    LAST_FORCED,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    cordon,
    decommission_taint,
    drain_clock,
    hand_over,
    taint_for_replacement,
    take_back,
)
from clm.kube.transport import TransportFailure
from clm.timestamps import parse_time
from tests.unit.test_kube_client import RecordedTransport, response, status_body

NOW = datetime(2024, 5, 1, 10, 0, 0, 250000, tzinfo=UTC)
OTHER_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
TAINT = decommission_taint()  # CLM's default: PreferNoSchedule
HARD_TAINT = decommission_taint(NO_SCHEDULE)  # decommission_node_no_schedule_taint: "true"


def node(
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": "n1", "resourceVersion": "5", "labels": labels or {}, "annotations": annotations or {}},
        "spec": {"unschedulable": unschedulable, "taints": taints or []},
    }


def patches(transport: RecordedTransport) -> list[dict[str, Any]]:
    return [c for c in transport.calls if c["method"] == "PATCH"]


def test_cordon_writes_label_taint_unschedulable_and_drain_start_in_one_patch():
    fresh = node({"lifecycle-status": "ready"}, taints=[OTHER_TAINT])
    done = node({"lifecycle-status": "draining"}, {DRAIN_START: "2024-05-01T10:00:01Z"}, [OTHER_TAINT, TAINT], True)
    transport = RecordedTransport(
        {("GET", "/api/v1/nodes/n1"): [response(200, fresh)], ("PATCH", "/api/v1/nodes/n1"): [response(200, done)]}
    )
    clock = cordon(KubeClient(transport), "n1", NOW)
    assert clock.drain_start == parse_time("2024-05-01T10:00:01Z") and clock.last_forced is None
    (patch,) = patches(transport)
    assert patch["content_type"] == MERGE_PATCH
    assert patch["body"] == {
        "metadata": {
            "labels": {"lifecycle-status": "draining"},
            "annotations": {DRAIN_START: "2024-05-01T10:00:01Z", DRAINED_BY: "clm"},
            "resourceVersion": "5",
        },
        "spec": {"taints": [OTHER_TAINT, TAINT], "unschedulable": True},
    }


def test_cordon_of_a_cordoned_node_writes_nothing_and_keeps_its_clocks():
    cordoned = node(
        {"lifecycle-status": "draining"},
        {DRAIN_START: "2024-04-30T08:00:00Z", LAST_FORCED: "2024-04-30T09:00:00Z"},
        [TAINT],
        True,
    )
    transport = RecordedTransport({("GET", "/api/v1/nodes/n1"): [response(200, cordoned)]})
    clock = cordon(KubeClient(transport), "n1", NOW)
    assert patches(transport) == []
    assert clock == drain_clock(cordoned)
    assert clock.last_forced == parse_time("2024-04-30T09:00:00Z")


def test_a_conflicting_write_is_retried_on_the_fresh_node():
    fresh, done = node(), node({"lifecycle-status": "draining"}, {DRAIN_START: "2024-05-01T10:00:01Z"}, [TAINT], True)
    conflict = response(409, status_body(409, "Conflict", "the object has been modified"))
    transport = RecordedTransport(
        {
            ("GET", "/api/v1/nodes/n1"): [response(200, fresh)],
            ("PATCH", "/api/v1/nodes/n1"): [conflict, response(200, done)],
        }
    )
    cordon(KubeClient(transport), "n1", NOW)
    assert len(patches(transport)) == 2 and len(transport.paths("GET")) == 2


def test_an_invalid_drain_start_is_replaced():
    broken = node({"lifecycle-status": "draining"}, {DRAIN_START: "yesterday"}, [TAINT], True)
    done = node({"lifecycle-status": "draining"}, {DRAIN_START: "2024-05-01T10:00:01Z"}, [TAINT], True)
    transport = RecordedTransport(
        {("GET", "/api/v1/nodes/n1"): [response(200, broken)], ("PATCH", "/api/v1/nodes/n1"): [response(200, done)]}
    )
    cordon(KubeClient(transport), "n1", NOW)
    assert patches(transport)[0]["body"]["metadata"]["annotations"] == {
        DRAIN_START: "2024-05-01T10:00:01Z",
        DRAINED_BY: "clm",
    }


@pytest.mark.parametrize(
    ("labels", "taints", "expected"),
    [
        (
            {"lifecycle-status": "ready"},  # the label stays: the cluster-lifecycle-controller's hand-over signal
            [OTHER_TAINT],
            {"metadata": {"resourceVersion": "5"}, "spec": {"taints": [OTHER_TAINT, TAINT]}},
        ),
        (
            {"lifecycle-status": "draining"},
            [HARD_TAINT],  # the config item was "true" and is no more: the effect follows it
            {"metadata": {"resourceVersion": "5"}, "spec": {"taints": [TAINT]}},
        ),
    ],
)
def test_taint_for_replacement(labels, taints, expected):
    transport = RecordedTransport(
        {
            ("GET", "/api/v1/nodes/n1"): [response(200, node(labels, taints=taints))],
            ("PATCH", "/api/v1/nodes/n1"): [response(200, node())],
        }
    )
    taint_for_replacement(KubeClient(transport), "n1")
    assert patches(transport)[0]["body"] == expected


def test_a_node_just_listed_is_tainted_without_reading_it_again_unless_it_changed_meanwhile():
    listed = node({"lifecycle-status": "ready"})
    transport = RecordedTransport(
        {
            ("GET", "/api/v1/nodes/n1"): [response(200, node({"lifecycle-status": "ready"}))],
            ("PATCH", "/api/v1/nodes/n1"): [
                response(409, status_body(409, "Conflict", "changed")),
                response(200, node()),
            ],
        }
    )
    taint_for_replacement(KubeClient(transport), "n1", known=listed)
    assert [c["method"] for c in transport.calls] == ["PATCH", "GET", "PATCH"]
    taint_for_replacement(KubeClient(transport), "n1", known=node(taints=[TAINT]))
    assert len(transport.calls) == 3  # tainted already, as listed: nothing to write


def test_the_no_schedule_taint_replaces_the_preferred_one():
    transport = RecordedTransport(
        {
            ("GET", "/api/v1/nodes/n1"): [response(200, node(taints=[OTHER_TAINT, TAINT]))],
            ("PATCH", "/api/v1/nodes/n1"): [response(200, node())],
        }
    )
    taint_for_replacement(KubeClient(transport), "n1", NO_SCHEDULE)
    assert patches(transport)[0]["body"]["spec"]["taints"] == [OTHER_TAINT, HARD_TAINT]


def test_a_missing_node_is_named():
    with pytest.raises(NodeNotFound, match="cluster c1: node n9 does not exist"):
        cordon(KubeClient(RecordedTransport({}), "c1"), "n9", NOW)


@pytest.mark.parametrize(
    "failure",
    [TransportFailure("Connection refused"), response(503, status_body(503, "ServiceUnavailable", "unavailable"))],
    ids=["unreachable", "unavailable"],
)
def test_a_write_that_may_pass_by_itself_stays_transient_for_the_step_to_be_retried(failure):
    """An API server unreachable or unavailable while the node is cordoned is a DrainError naming the node that is
    transient: the handler (clm.workflow.lambda_handler) raises it as TransientError, which the state machine
    retries, instead of failing the run."""
    transport = RecordedTransport(
        {("GET", "/api/v1/nodes/n1"): [response(200, node())], ("PATCH", "/api/v1/nodes/n1"): [failure]}
    )
    with pytest.raises(DrainError, match="updating node n1") as info:
        cordon(KubeClient(transport, "c1"), "n1", NOW)  # after the client's own retries
    assert info.value.transient


def test_a_refused_write_is_a_drain_error_naming_the_node():
    forbidden = response(403, status_body(403, "Forbidden", "nodes is forbidden"))
    transport = RecordedTransport(
        {("GET", "/api/v1/nodes/n1"): [response(200, node())], ("PATCH", "/api/v1/nodes/n1"): [forbidden]}
    )
    with pytest.raises(DrainError, match="updating node n1: 403") as info:
        cordon(KubeClient(transport, "c1"), "n1", NOW)
    assert not info.value.transient


def patched(current: dict[str, Any], act, after: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The patch bodies `act(kube)` sends for node `current` (the server answering with `after`)."""
    transport = RecordedTransport(
        {
            ("GET", "/api/v1/nodes/n1"): [response(200, current)],
            ("PATCH", "/api/v1/nodes/n1"): [response(200, after or node())],
        }
    )
    act(KubeClient(transport, "c1"))
    return [p["body"] for p in patches(transport)]


def test_hand_over_marks_the_node_for_the_controller_in_one_patch():
    """CLM's clc strategy (clc_update.go markNodes, node_pool_manager.go MarkNodeForDecommission): taint and
    label decommission-pending; here also who drains it, so that CLM never does."""
    [body] = patched(node({"lifecycle-status": "ready"}), lambda kube: hand_over(kube, "n1", NO_SCHEDULE))
    assert body == {
        "metadata": {
            "labels": {"lifecycle-status": "decommission-pending"},
            "annotations": {DRAINED_BY: "cluster-lifecycle-controller"},
            "resourceVersion": "5",
        },
        "spec": {"taints": [HARD_TAINT]},
    }


def test_hand_over_of_a_removed_pools_node_asks_for_no_successor():
    [body] = patched(node(), lambda kube: hand_over(kube, "n1", NO_SCHEDULE, no_replacement=True))
    assert body["metadata"]["labels"]["cluster-lifecycle-controller.zalan.do/replacement-strategy"] == "none"


@pytest.mark.parametrize("by", ["clm", ""])
def test_a_node_draining_and_not_the_controllers_is_never_handed_over(by):
    draining = node({"lifecycle-status": "draining"}, {DRAINED_BY: by}, [TAINT], True)
    assert patched(draining, lambda kube: hand_over(kube, "n1", PREFER_NO_SCHEDULE)) == []


def test_hand_over_is_idempotent():
    handed = node({"lifecycle-status": "decommission-pending"}, {DRAINED_BY: "cluster-lifecycle-controller"}, [TAINT])
    assert patched(handed, lambda kube: hand_over(kube, "n1", PREFER_NO_SCHEDULE)) == []


def test_take_back_returns_a_node_the_controller_has_not_started_to_clm():
    """As CLM's AbortNodeDecommissioning: decommission-pending -> ready (the taint stays); and no longer the
    controller's."""
    handed = node({"lifecycle-status": "decommission-pending"}, {DRAINED_BY: "cluster-lifecycle-controller"}, [TAINT])
    taken: list[bool] = []
    assert patched(handed, lambda kube: taken.append(take_back(kube, "n1"))) == [
        {
            "metadata": {
                "annotations": {DRAINED_BY: None},
                "labels": {"lifecycle-status": "ready"},
                "resourceVersion": "5",
            }
        }
    ]
    assert taken == [True]


def test_take_back_leaves_a_node_the_controller_is_draining():
    draining = node({"lifecycle-status": "draining"}, {DRAINED_BY: "cluster-lifecycle-controller"}, [TAINT], True)
    taken: list[bool] = []
    assert patched(draining, lambda kube: taken.append(take_back(kube, "n1"))) == []
    assert taken == [False]


@pytest.mark.parametrize("status", ["decommission-pending", "draining"])
def test_cordon_refuses_a_node_the_controller_was_handed(status):
    """The step's own guard, beside the planner's: CLM never drains a node handed to the controller."""
    handed = node({"lifecycle-status": status}, {DRAINED_BY: "cluster-lifecycle-controller"}, [TAINT])
    with pytest.raises(DrainError, match="cluster c1: node n1 is the cluster-lifecycle-controller's to drain"):
        patched(handed, lambda kube: cordon(kube, "n1", NOW))


def test_a_stale_hand_over_mark_on_a_ready_node_does_not_stop_clms_drain():
    """A node whose mark says the controller but whose label says ready (someone set the annotation alone, or the
    label was reset) is CLM's to drain: the roll does not get stuck on it, and the mark says CLM from then on."""
    stale = node({"lifecycle-status": "ready"}, {DRAINED_BY: "cluster-lifecycle-controller"})
    after = node({"lifecycle-status": "draining"}, {DRAIN_START: "2024-05-01T10:00:01Z", DRAINED_BY: "clm"})
    [body] = patched(stale, lambda kube: cordon(kube, "n1", NOW), after)
    assert body["metadata"]["annotations"][DRAINED_BY] == "clm" and body["spec"]["unschedulable"] is True
