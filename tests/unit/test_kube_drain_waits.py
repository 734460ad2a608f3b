"""How long a drain pass hands over to the workflow's Wait state: computed from what gates progress, never fixed."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from clm.kube.client import KubeClient
from clm.kube.drain import drain_pass
from clm.kube.nodes import LAST_PROGRESS
from clm.kube.settings import DrainSettings
from clm.timestamps import format_time
from tests.unit.test_kube_client import RecordedTransport, response
from tests.unit.test_kube_eviction import NOW, cordoned_node, recorded_v1, too_many_requests
from tests.unit.test_kube_pods import make_pod

WEB = {"app": "web"}


def budget(*, allowed: int = 0, healthy: int = 3, expected: int = 3, version: str = "7") -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "app", "generation": 1, "resourceVersion": version},
        "spec": {"minAvailable": 3, "selector": {"matchLabels": WEB}},
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": 3,
            "expectedPods": expected,
        },
    }


def terminating(name: str, due: datetime, grace: int = 30) -> dict[str, Any]:
    pod = make_pod(name, labels=WEB, deleting=due)
    pod["metadata"]["deletionGracePeriodSeconds"] = grace
    return pod


def node(pods: list[dict[str, Any]], budgets: list[dict[str, Any]], drain_start: datetime) -> RecordedTransport:
    listed = {"metadata": {"resourceVersion": "100"}}
    return recorded_v1(
        {
            ("GET", "/api/v1/nodes/n1"): [response(200, cordoned_node(drain_start.strftime("%Y-%m-%dT%H:%M:%SZ")))],
            ("GET", "/api/v1/pods"): [response(200, {**listed, "items": pods})],
            ("GET", "/apis/policy/v1/poddisruptionbudgets"): [response(200, {**listed, "items": budgets})],
        }
    )


def one_pass(
    transport: RecordedTransport, settings: DrainSettings | None = None, seen: dict[str, str] | None = None
) -> dict[str, Any]:
    kube = KubeClient(transport, "c1")
    return drain_pass(kube, "n1", settings or DrainSettings(), now=NOW, budget_seconds=0, seen=seen)


@pytest.mark.parametrize(
    ("due_in", "wait"),
    [
        (10, 10),  # the timestamp's whole second: gone by 11 s at the latest; back half a second before
        (3, 3),
        (2, 2),
        (-4, 4),  # overdue (3 s past the latest end, and the pass's own moment): a wait growing with it
        (-20, 5),
    ],
)
def test_only_terminating_pods_left_wait_until_just_before_the_last_grace_period_ends(due_in: int, wait: int) -> None:
    pods = [
        terminating("web-1", NOW + timedelta(seconds=due_in - 5)),
        terminating("web-2", NOW + timedelta(seconds=due_in)),
    ]
    result = one_pass(node(pods, [budget()], NOW))
    assert (result["done"], result["terminating"], result["wait_seconds"]) == (False, ["app/web-1", "app/web-2"], wait)


HOUR_GRACE = DrainSettings(grace_period=3600, min_pod_lifetime=0, min_healthy_sibling_lifetime=0)


@pytest.mark.parametrize("drain_age", [5, 600, 3000])
def test_a_budget_blocked_with_every_pod_healthy_parks_the_drain_until_the_force_rules_allow(drain_age: int) -> None:
    pods = [make_pod("web-1", labels=WEB)]
    result = one_pass(node(pods, [budget()], NOW - timedelta(seconds=drain_age)), HOUR_GRACE)
    assert [b["pdb"] for b in result["blocked"]] == ["app/web"]
    forced_in = 3600 - drain_age
    assert result["wait_seconds"] == forced_in - 1  # half a second before, in whole seconds
    assert result["park"] == {"seconds": forced_in - 1, "since": format_time(NOW)}  # when it listed the pods


def test_a_blocked_drain_close_to_its_force_moment_waits_instead_of_parking() -> None:
    pods = [make_pod("web-1", labels=WEB)]
    result = one_pass(node(pods, [budget()], NOW - timedelta(seconds=3580)), HOUR_GRACE)
    assert (result["wait_seconds"], result["park"]) == (19, None)  # not longer than drain_poll_interval


def test_a_settling_budget_never_parks_the_drain() -> None:
    pods = [make_pod("web-1", labels=WEB)]
    result = one_pass(node(pods, [budget(healthy=2, expected=3)], NOW - timedelta(seconds=5)), HOUR_GRACE)
    assert (result["wait_seconds"], result["park"]) == (1, None)


def test_a_blocked_pod_is_looked_at_again_just_before_the_force_rules_allow() -> None:
    settings = DrainSettings(grace_period=60, min_pod_lifetime=0, min_healthy_sibling_lifetime=0)
    pods = [make_pod("web-1", labels=WEB)]
    result = one_pass(node(pods, [budget()], NOW - timedelta(seconds=40)), settings)
    assert result["wait_seconds"] == 19  # forced from 20 s on; the next pass comes half a second before


@pytest.mark.parametrize(("drain_age", "wait"), [(3, 1), (55, 6), (1000, 30)])
def test_a_settling_budget_is_looked_at_again_soon_while_the_drain_is_young(drain_age: int, wait: int) -> None:
    """A budget that has not changed since the previous pass (a replacement that does not come up): the back-off
    grows with the drain's age, up to the poll interval."""
    pods = [make_pod("web-1", labels=WEB)]
    settling = budget(healthy=2, expected=3)  # a replacement is starting
    result = one_pass(node(pods, [settling], NOW - timedelta(seconds=drain_age)), seen={"app/web": "7"})
    assert (result["wait_seconds"], result["budgets_seen"]) == (wait, {"app/web": "7"})


def test_a_settling_budget_that_moved_since_the_previous_pass_is_looked_at_again_soon() -> None:
    """A batch's drains taking turns on one budget: however long this drain has waited for its turn, the budget
    changed since its previous pass (another drain evicted through it), so it opens again within seconds."""
    pods = [make_pod("web-1", labels=WEB)]
    moved = budget(healthy=2, expected=3, version="9")
    result = one_pass(node(pods, [moved], NOW - timedelta(seconds=1000)), seen={"app/web": "7"})
    assert (result["wait_seconds"], result["budgets_seen"]) == (1, {"app/web": "9"})
    result = one_pass(node(pods, [moved], NOW - timedelta(seconds=1000)))  # the drain's first pass here
    assert result["wait_seconds"] == 1


def test_a_settling_budget_is_looked_at_again_soon_while_the_drain_progresses() -> None:
    """A node with many pods behind a one-at-a-time budget: an old drain that evicted a moment ago stays quick."""
    pods = [make_pod("web-1", labels=WEB)]
    transport = node(pods, [budget(healthy=2, expected=3)], NOW - timedelta(seconds=1000))
    progressing = cordoned_node(format_time(NOW - timedelta(seconds=1000)))
    progressing["metadata"]["annotations"][LAST_PROGRESS] = format_time(NOW - timedelta(seconds=3))
    transport.recordings[("GET", "/api/v1/nodes/n1")] = [response(200, progressing)]
    assert one_pass(transport)["wait_seconds"] == 1


def test_a_pod_gone_before_its_eviction_has_the_node_listed_again_soon() -> None:
    pods = [make_pod("web-1", labels=WEB)]  # its eviction is answered 404: deleted meanwhile
    result = one_pass(node(pods, [budget(allowed=1)], NOW))
    assert (result["done"], result["evicted"], result["blocked"], result["wait_seconds"]) == (False, [], [], 1)


def test_a_budget_that_just_started_refusing_is_settling_not_parked_on() -> None:
    """A sibling drain's eviction: the evicted pod gone, its replacement not created yet, every pod left healthy
    (an integer minAvailable counts the pods that exist). The budget opens within seconds: no park for days."""
    pods = [make_pod("web-1", labels=WEB)]
    just_refusing = budget()
    condition = {"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods"}
    just_refusing["status"]["conditions"] = [
        {**condition, "lastTransitionTime": format_time(NOW - timedelta(seconds=2))}
    ]
    result = one_pass(node(pods, [just_refusing], NOW - timedelta(seconds=5)), HOUR_GRACE)
    assert (result["wait_seconds"], result["park"]) == (1, None)
    steady = budget()
    steady["status"]["conditions"] = [{**condition, "lastTransitionTime": format_time(NOW - timedelta(minutes=5))}]
    result = one_pass(node(pods, [steady], NOW - timedelta(seconds=5)), HOUR_GRACE)
    assert result["park"] is not None


def test_a_budget_listed_open_that_refused_the_eviction_is_settling_not_parked_on() -> None:
    """Another drain of the batch took the budget's one disruption between this pass's list and its eviction."""
    pods = [make_pod("web-1", labels=WEB)]
    transport = node(pods, [budget(allowed=1, healthy=4, expected=4)], NOW - timedelta(seconds=5))
    transport.recordings[("POST", "/api/v1/namespaces/app/pods/web-1/eviction")] = [too_many_requests("web")]
    result = one_pass(transport, HOUR_GRACE)
    assert [b["pdb"] for b in result["blocked"]] == ["app/web"]
    assert (result["wait_seconds"], result["park"]) == (1, None)


def test_a_pass_that_evicted_watches_its_pods_go_when_their_grace_ends_within_it() -> None:
    """The pod this pass evicted has a 3 s grace period, more than WATCH_HORIZON but within the pass: the pass
    watches for it to go and finds the node empty, instead of a Wait state and another pass (a Task, a Choice and
    a Wait: three transitions, which cost more than the seconds of watch)."""
    pod = {**make_pod("web-1", labels=WEB)}
    pod["metadata"]["uid"] = "u1"
    going = terminating("web-1", NOW + timedelta(seconds=3), grace=3)
    going["metadata"]["uid"] = "u1"
    listed = {"metadata": {"resourceVersion": "100"}}
    transport = node([pod], [budget(allowed=1)], NOW)
    transport.recordings[("GET", "/api/v1/pods")] = [
        response(200, {**listed, "items": [pod]}),
        response(200, {**listed, "items": [going]}),
        response(200, {**listed, "items": []}),
    ]
    transport.recordings[("POST", "/api/v1/namespaces/app/pods/web-1/eviction")] = [response(201, {"code": 201})]
    transport.recordings[("PATCH", "/api/v1/nodes/n1")] = [response(200, cordoned_node(format_time(NOW)))]
    transport.streams["/api/v1/pods"] = [{"type": "DELETED", "object": going}]
    result = drain_pass(KubeClient(transport, "c1"), "n1", DrainSettings(), now=NOW, budget_seconds=6)
    assert (result["done"], result["evicted"]) == (True, ["app/web-1"])
    assert [c["path"] for c in transport.calls if c["method"] == "WATCH"] == ["/api/v1/pods"]
