"""Node events and what they are made from: a blocked drain recorded on its Node (pods walked to their owners,
once per blocked spell), the `Drain Blocked` and `Node Replaced` details, old nodes paired with their successors,
and the blocked drains `clm status` and `--follow` show."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from clm.cli.blocked_drains import latest_blocked
from clm.cli.follow import line_text
from clm.cli.run_history import STEP_LINES, Line
from clm.kube.blocked_drain import ANNOTATION, blocked_record, blocked_until, blocking_pods, record_blocked
from clm.kube.client import KubeClient
from clm.rolling.observe import node_state
from clm.rolling.pool import Member, NodeState, PoolState
from clm.rolling.replaced import gone, pair
from clm.timestamps import format_time
from clm.workflow import node_events
from clm.workflow.drain_aside import announces
from clm.workflow.node_events import drain_blocked_detail, node_replaced_detail
from tests.unit.test_kube_client import RecordedTransport, response, status_body
from tests.unit.test_kube_pods import T0, make_pod

NOW = T0 + timedelta(days=10)
UNTIL = NOW + timedelta(hours=1)
ODD = "we[b].x-1"  # brackets are not a Kubernetes name's, but a reason's text is free: nothing reads as markup


def node(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "resourceVersion": "7", "annotations": annotations or {}}, "spec": {}}


def a_cluster(recordings: dict[tuple[str, str], list]) -> tuple[KubeClient, RecordedTransport]:
    transport = RecordedTransport(recordings)
    return KubeClient(transport, "c1"), transport


def owned(name: str, kind: str, owner: str) -> dict[str, Any]:
    pod = make_pod(name, owner=None)
    pod["metadata"]["ownerReferences"] = [{"kind": kind, "name": owner, "controller": True, "uid": "u"}]
    return pod


def test_blocking_pods_name_their_owner_a_replica_sets_walked_to_its_deployment_once():
    replica_set = {
        "metadata": {"name": "web-5d4", "ownerReferences": [{"kind": "Deployment", "name": "web", "controller": True}]}
    }
    pods = [owned("web-5d4-a", "ReplicaSet", "web-5d4"), owned("web-5d4-b", "ReplicaSet", "web-5d4")]
    pods += [owned("db-0", "StatefulSet", "db"), make_pod("bare", owner=None)]
    kube, transport = a_cluster(
        {
            ("GET", "/api/v1/pods"): [response(200, {"items": pods})],
            ("GET", "/apis/apps/v1/namespaces/app/replicasets/web-5d4"): [response(200, replica_set)],
        }
    )
    blocked = [{"pod": f"app/{p['metadata']['name']}", "reason": "r", "pdb": "app/pdb"} for p in pods]
    found = blocking_pods(kube, "n1", [*blocked, {"pod": "app/gone", "reason": "r", "pdb": None}])
    assert [(p["name"], p["owner_kind"], p["owner_name"], p["budget"]) for p in found] == [
        ("web-5d4-a", "Deployment", "web", "app/pdb"),
        ("web-5d4-b", "Deployment", "web", "app/pdb"),
        ("db-0", "StatefulSet", "db", "app/pdb"),
        ("bare", "", "", "app/pdb"),
        ("gone", "", "", ""),
    ]
    assert len([c for c in transport.calls if "replicasets" in c["path"]]) == 1


def test_a_replica_set_that_cannot_be_read_is_named_itself():
    pod = owned("web-5d4-a", "ReplicaSet", "web-5d4")
    forbidden = response(403, status_body(403, "Forbidden", "replicasets is forbidden"))
    kube, _ = a_cluster(
        {
            ("GET", "/api/v1/pods"): [response(200, {"items": [pod]})],
            ("GET", "/apis/apps/v1/namespaces/app/replicasets/web-5d4"): [forbidden],
        }
    )
    [found] = blocking_pods(kube, "n1", [{"pod": "app/web-5d4-a", "reason": "r", "pdb": "app/pdb"}])
    assert (found["owner_kind"], found["owner_name"]) == ("ReplicaSet", "web-5d4")


def test_the_spell_starts_once_and_keeps_its_since_when_recorded_again():
    pods = [{"namespace": "app", "name": ODD, "owner_kind": "", "owner_name": "", "budget": "app/p", "reason": ODD}]
    first = {"since": format_time(NOW - timedelta(minutes=5)), "until": format_time(NOW), "pods": pods}
    kube, transport = a_cluster(
        {
            ("GET", "/api/v1/nodes/n1"): [response(200, node()), response(200, node({ANNOTATION: json.dumps(first)}))],
            ("PATCH", "/api/v1/nodes/n1"): [response(200, node())],
        }
    )
    starts: list[dict[str, Any]] = []
    record = record_blocked(kube, "n1", pods, NOW, UNTIL, starts.append)
    assert starts == [record] and record == {"since": format_time(NOW), "until": format_time(UNTIL), "pods": pods}
    again = record_blocked(kube, "n1", pods, NOW + timedelta(hours=1), UNTIL, starts.append)
    assert len(starts) == 1 and again["since"] == first["since"]  # the same spell: no second event
    written = [
        json.loads(c["body"]["metadata"]["annotations"][ANNOTATION]) for c in transport.calls if c["method"] == "PATCH"
    ]
    assert written == [record, again]
    assert blocked_until(node({ANNOTATION: json.dumps(again)})) == UNTIL


def test_a_failed_publication_leaves_the_spell_unrecorded_so_that_the_retry_publishes_it():
    kube, transport = a_cluster({("GET", "/api/v1/nodes/n1"): [response(200, node())]})

    def refused(_: dict[str, Any]) -> None:
        raise node_events.NodeEventsRefused("refused")

    with pytest.raises(node_events.NodeEventsRefused):
        record_blocked(kube, "n1", [], NOW, UNTIL, refused)
    assert not [c for c in transport.calls if c["method"] == "PATCH"]


def test_an_unreadable_record_is_ignored_and_the_planner_sees_when_the_node_is_due():
    assert blocked_record(node({ANNOTATION: "{not json"})) is None
    assert blocked_record(node({ANNOTATION: json.dumps({"since": "x", "until": "y"})})) is None
    record = {"since": format_time(NOW), "until": format_time(UNTIL), "pods": []}
    assert node_state(node({ANNOTATION: json.dumps(record)}), NOW).set_aside_seconds == 3600
    assert node_state(node(), NOW).set_aside_seconds is None


def test_a_blocked_drain_is_announced_only_when_the_plan_asked_and_it_would_park():
    park = {"node": "n1", "done": False, "park": {"seconds": 60, "since": "t"}}
    assert announces({"replacement": {"announce_blocked": True}}, park)
    assert not announces({"replacement": {"announce_blocked": False, "set_aside": True}}, park)  # not without it
    assert not announces({"replacement": {"announce_blocked": True}}, {**park, "park": None})  # settling: goes on
    assert not announces({"replacement": {}}, park)


def test_the_drain_blocked_detail_names_the_node_its_pods_owners_and_budgets_since_when():
    pods = [
        {
            "namespace": "app",
            "name": ODD,
            "owner_kind": "Deployment",
            "owner_name": "web",
            "budget": "app/p",
            "reason": "r",
        }
    ]
    record = {"since": "2024-01-11T00:00:00Z", "until": "2024-01-11T01:00:00Z", "pods": pods}
    detail = drain_blocked_detail("c1", "workers", {"node": "n1", "instance_id": "i-1", "set_aside": True}, record)
    assert detail == {
        "cluster_id": "c1",
        "node_pool": "workers",
        "node": "n1",
        "instance_id": "i-1",
        "blocked_since": "2024-01-11T00:00:00Z",
        "until": "2024-01-11T01:00:00Z",
        "pods": pods,
    }
    assert json.loads(json.dumps(detail)) == detail


def test_events_go_on_the_bus_named_by_the_environment_and_a_refusal_raises(monkeypatch):
    calls: list[dict[str, Any]] = []

    class Events:
        def put_events(self, **request: list[dict[str, Any]]) -> dict[str, Any]:
            calls.extend(request["Entries"])
            return {"Entries": [{"ErrorCode": "Throttled", "ErrorMessage": "slow down"} for _ in request["Entries"]]}

    monkeypatch.setattr(node_events, "client", lambda service: Events())
    monkeypatch.delenv("CLM_EVENT_BUS", raising=False)
    node_events.publish([("Drain Blocked", {"node": "n1"})])
    assert calls == []  # no bus: nothing published
    monkeypatch.setenv("CLM_EVENT_BUS", "clm-bus")
    with pytest.raises(node_events.NodeEventsRefused, match="Throttled"):
        node_events.publish([("Drain Blocked", {"node": "n1"})])
    assert [(c["Source"], c["DetailType"], c["EventBusName"]) for c in calls] == [
        ("clm.node", "Drain Blocked", "clm-bus")
    ]


def member(n: int, *, outdated: bool = False, age: float = 100.0, ready: bool = True, replaces: str = "") -> Member:
    return Member(f"i-{n}", "a", "InService", outdated, age, NodeState(f"n{n}", ready, replaces=replaces))


def test_terminated_nodes_pair_with_the_youngest_unclaimed_successors_once_nothing_boots():
    old = [{"instance_id": "i-1", "node": "n1"}, {"instance_id": "i-2", "node": "n2"}]
    members = [member(2, outdated=True), member(3, age=5000.0), member(4, age=10.0), member(5, age=20.0)]
    state = PoolState("workers", "asg", 4, 1, 6, members)
    assert gone(old, state) == [{"instance_id": "i-1", "node": "n1"}]  # i-2 is still in the pool
    pairs, left = pair(old, state, claimed={"n4"})
    assert [(o["node"], m.node.name) for o, m in pairs] == [("n1", "n5"), ("n2", "n3")] and left == []
    booting = PoolState("workers", "asg", 4, 1, 6, [*members[:3], member(5, age=1.0, ready=False)])
    assert pair(old, booting, claimed=set()) == ([], old)  # a successor may still be booting: not yet


def test_the_node_replaced_detail_names_old_and_new():
    detail = node_replaced_detail("c1", "workers", {"instance_id": "i-1", "node": "n1"}, member(5))
    assert detail == {
        "cluster_id": "c1",
        "node_pool": "workers",
        "node": "n1",
        "instance_id": "i-1",
        "new_node": "n5",
        "new_instance_id": "i-5",
    }


def drain_event(n: int, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": n,
        "type": "LambdaFunctionSucceeded",
        "lambdaFunctionSucceededEventDetails": {"output": json.dumps(result)},
    }


ASIDE = {
    "node": "n1",
    "done": False,
    "blocked": [{"pod": f"app/{ODD}", "reason": "[red]x", "pdb": "app/p"}],
    "park": {"seconds": 3600, "since": "t"},
    "set_aside": True,
    "blocked_since": "2024-01-11T00:00:00Z",
    "until": "2024-01-11T01:00:00Z",
    "blocked_pods": [
        {
            "namespace": "app",
            "name": ODD,
            "owner_kind": "Deployment",
            "owner_name": "w[b]",
            "budget": "app/p",
            "reason": "[red]x",
        }
    ],
}


def test_follow_shows_a_set_aside_drain_with_pods_owners_budgets_and_times_literally():
    text, style = STEP_LINES["Drain"]({}, ASIDE)
    assert text == (
        "Drain n1: set aside, cordoned, blocked since 2024-01-11T00:00:00Z; back at 2024-01-11T01:00:00Z: "
        f"blocked by app/{ODD} (Deployment w[b]; PDB app/p)"
    )
    assert style == "yellow" and line_text(Line(None, text, style)).plain.endswith(text)


def test_status_finds_the_drains_blocked_now_and_forgets_nodes_terminated_since():
    """A node set aside and then terminated, by Terminate or by a drain pass (a batch's, whose Replace Drain returns
    at once saying so), is blocked no more."""
    parked = {**ASIDE, "node": "n2", "set_aside": False, "blocked_pods": None}

    def ended(state: str, node: str) -> dict:
        return {"stateEnteredEventDetails": {"name": state, "input": json.dumps({"replacement": {"node": node}})}}

    events = [
        drain_event(1, ASIDE),
        drain_event(2, parked),
        drain_event(3, {**ASIDE, "node": "n3"}),
        {"id": 4, **ended("Terminate", "n3")},
        drain_event(5, {"node": "n4", "done": False, "blocked": [], "park": None, "set_aside": False}),
        drain_event(6, {**ASIDE, "node": "n5"}),
        {"id": 7, **ended("TerminatedByDrain", "n5")},
    ]
    assert sorted(latest_blocked(events)) == ["n1", "n2"]
    assert STEP_LINES["Drain"]({}, parked)[0].startswith("Drain n2: blocked: app/we[b].x-1 ([red]x; PDB app/p); parked")
    announced = {**parked, "blocked_pods": ASIDE["blocked_pods"]}  # parked in a pool with drain_blocked: continue
    assert STEP_LINES["Drain"]({}, announced)[0] == (
        "Drain n2: parked for 1h, blocked since 2024-01-11T00:00:00Z: blocked by app/we[b].x-1 (Deployment w[b]; "
        "PDB app/p) (clm provision wakes it)"
    )
