"""Node marks: cordon and mark_for_decommission write CLM's label, taint and clocks in one conflict-safe patch."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from clm.kube.client import MERGE_PATCH, KubeClient
from clm.kube.errors import DrainError, NodeNotFound
from clm.kube.nodes import (
    DRAIN_START,
    LAST_FORCED,
    NO_SCHEDULE,
    cordon,
    decommission_taint,
    drain_clock,
    mark_for_decommission,
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
            "annotations": {DRAIN_START: "2024-05-01T10:00:01Z"},
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
    assert patches(transport)[0]["body"]["metadata"]["annotations"] == {DRAIN_START: "2024-05-01T10:00:01Z"}


@pytest.mark.parametrize(
    ("labels", "taints", "expected"),
    [
        (
            {"lifecycle-status": "ready"},
            [OTHER_TAINT],
            {
                "metadata": {"labels": {"lifecycle-status": "decommission-pending"}, "resourceVersion": "5"},
                "spec": {"taints": [OTHER_TAINT, TAINT]},
            },
        ),
        (
            {"lifecycle-status": "draining"},
            [HARD_TAINT],  # the config item was "true" and is no more: the effect follows it
            {"metadata": {"resourceVersion": "5"}, "spec": {"taints": [TAINT]}},
        ),
    ],
)
def test_mark_for_decommission(labels, taints, expected):
    transport = RecordedTransport(
        {
            ("GET", "/api/v1/nodes/n1"): [response(200, node(labels, taints=taints))],
            ("PATCH", "/api/v1/nodes/n1"): [response(200, node())],
        }
    )
    mark_for_decommission(KubeClient(transport), "n1")
    assert patches(transport)[0]["body"] == expected


def test_the_no_schedule_taint_replaces_the_preferred_one():
    transport = RecordedTransport(
        {
            ("GET", "/api/v1/nodes/n1"): [response(200, node(taints=[OTHER_TAINT, TAINT]))],
            ("PATCH", "/api/v1/nodes/n1"): [response(200, node())],
        }
    )
    mark_for_decommission(KubeClient(transport), "n1", NO_SCHEDULE)
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
