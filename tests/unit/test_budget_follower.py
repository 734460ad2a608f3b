"""The budgets a batch pass follows by one watch (clm.kube.budget_follower): an eviction's own decrement, a
refusal, a listing made while evicting, and a server that will not keep a watch open, none of which may let an
eviction go out on a count from before it."""

from __future__ import annotations

import dataclasses
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from clm.kube.budget_follower import BudgetFollower
from clm.kube.budgets import Budget
from clm.kube.discovery import Resource
from clm.kube.drain_observation import PassClock
from clm.kube.errors import KubeApiError

RESOURCE = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True)


def pdb(allowed: int, version: str, disrupted: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "web", "name": "web", "resourceVersion": version, "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
        "status": {
            "disruptionsAllowed": allowed,
            "currentHealthy": 6,
            "desiredHealthy": 5,
            "expectedPods": 6,
            "observedGeneration": 1,
            "disruptedPods": {name: "2026-11-28T15:00:00Z" for name in disrupted},
        },
    }


def pod(name: str, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "web", "name": name, "labels": {"app": "web"}},
        "status": {"conditions": [{"type": "Ready", "status": str(ready)}]},
    }


class Stream:
    def __init__(self, events: queue.Queue[dict[str, Any] | None]):
        self.feed = events

    def events(self) -> Iterator[dict[str, Any]]:
        while (event := self.feed.get()) is not None:
            yield event

    def close(self) -> None:
        self.feed.put(None)


class FakeKube:
    """A server whose budget watch is fed by the test and whose listing returns `listed`."""

    def __init__(self, listed: dict[str, Any], watchable: bool = True):
        self.listed, self.watchable = listed, watchable
        self.discovery = type("Discovery", (), {"pdb_resource": staticmethod(lambda: RESOURCE)})()
        self.feed: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.lists = self.watches = 0
        self.listing = threading.Event()  # set while a listing is in flight, when `hold` is set
        self.hold: threading.Event | None = None

    def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        self.lists += 1
        if self.hold is not None:
            self.listing.set()
            self.hold.wait(5)
        return {"metadata": {"resourceVersion": self.listed["metadata"]["resourceVersion"]}, "items": [self.listed]}

    def watch(self, path: str, query: dict[str, Any], timeout: float) -> Stream:
        self.watches += 1
        if not self.watchable:
            raise KubeApiError("GET", path, 403, "forbidden", "kube-1")
        return Stream(self.feed)


def allowed(follower: BudgetFollower) -> int:
    [budget] = follower.listing()[0]
    return budget.disruptions_allowed


def settle(kube: FakeKube) -> None:
    """Until the follower has taken every event fed so far."""
    done = threading.Event()
    kube.feed.put({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "0"}}})
    while not kube.feed.empty():
        done.wait(0.01)


@pytest.fixture
def follower() -> Iterator[tuple[BudgetFollower, FakeKube]]:
    kube = FakeKube(pdb(1, "10"))
    made = BudgetFollower(kube, ([Budget.from_object(pdb(1, "10"), "policy/v1")], "10"), PassClock(None), 30)  # type: ignore[arg-type]
    made.start()
    yield made, kube
    made.stop()


def test_a_budget_evicted_through_allows_nothing_until_its_status_shows_that_eviction(follower) -> None:
    """The watch may deliver the eviction's own update before the eviction's response: the budget is marked
    before the request, and only the update naming the pod clears it."""
    made, kube = follower
    [budget] = made.listing()[0]
    made.evicting(pod("web-1"), [budget])
    assert allowed(made) == 0
    [spent] = made.listing()[0]
    # It opens on its own: not a block to park on (which a count of 0 with every pod healthy would be).
    assert spent.settling and not dataclasses.replace(budget, disruptions_allowed=0).settling
    kube.feed.put({"type": "MODIFIED", "object": pdb(1, "11")})  # an update from before the eviction
    settle(kube)
    assert allowed(made) == 0
    kube.feed.put({"type": "MODIFIED", "object": pdb(0, "12", ("web-1",))})  # the eviction's decrement
    kube.feed.put({"type": "MODIFIED", "object": pdb(1, "13")})  # the replacement Ready
    settle(kube)
    assert allowed(made) == 1


def test_an_unready_pods_eviction_spends_nothing_and_a_refusal_blocks_until_the_budget_changes(follower) -> None:
    made, kube = follower
    [budget] = made.listing()[0]
    made.evicting(pod("starting", ready=False), [budget])
    assert allowed(made) == 1
    made.evicting(pod("web-1"), [budget])
    made.refused(pod("web-1"), budget.key)  # another drain took the disruption first
    assert allowed(made) == 0 and made.listing()[0][0].settling
    kube.feed.put({"type": "MODIFIED", "object": pdb(1, "11")})
    settle(kube)
    assert allowed(made) == 1


def test_a_listing_made_while_evicting_does_not_clear_that_eviction(follower) -> None:
    """The watch ends; the follower lists again while a pod is being evicted: the listing may be from before the
    eviction's decrement, so that eviction stays spent until the new watch shows it."""
    made, kube = follower
    [budget] = made.listing()[0]
    made.evicting(pod("web-1"), [budget])
    kube.hold = threading.Event()
    kube.feed.put(None)  # the server ends the watch
    assert kube.listing.wait(5)
    made.evicting(pod("web-2"), [budget])  # sent while the listing is made
    kube.hold.set()
    kube.hold = None
    settle(kube)
    assert kube.lists == 1 and kube.watches == 2
    assert allowed(made) == 0  # web-1 cleared by the listing, web-2 not
    kube.feed.put({"type": "MODIFIED", "object": pdb(1, "14", ("web-2",))})
    settle(kube)
    assert allowed(made) == 1


def test_a_wake_comes_when_a_blocking_budget_allows_and_at_once_if_one_does(follower) -> None:
    made, kube = follower
    [budget] = made.listing()[0]
    wake: queue.Queue[str] = queue.Queue()
    with made.waking({budget.key}, wake):
        assert "web/web" in wake.get(timeout=1)
    made.evicting(pod("web-1"), [budget])
    with made.waking({budget.key}, wake), made.waking({"other/budget"}, queue.Queue()):
        assert wake.empty()
        kube.feed.put({"type": "MODIFIED", "object": pdb(0, "11", ("web-1",))})
        settle(kube)
        assert wake.empty()
        kube.feed.put({"type": "MODIFIED", "object": pdb(1, "12")})
        assert "web/web" in wake.get(timeout=1)


def test_without_a_watch_each_listing_lists_the_budgets() -> None:
    kube = FakeKube(pdb(1, "10"), watchable=False)
    made = BudgetFollower(kube, ([Budget.from_object(pdb(0, "9"), "policy/v1")], "9"), PassClock(None), 30)  # type: ignore[arg-type]
    made.start()
    made._thread.join(5)
    assert made.broken and kube.watches == 1
    assert allowed(made) == 1 and allowed(made) == 1 and kube.lists == 2
    made.stop()


def test_an_object_the_follower_cannot_read_leaves_it_listing_for_each_round(follower) -> None:
    """A budget event it cannot read (here, no name) must not leave the pass on the budgets it had: it lists."""
    made, kube = follower
    kube.listed = pdb(0, "20")
    kube.feed.put({"type": "MODIFIED", "object": {"metadata": {"namespace": "web"}}})
    made._thread.join(5)
    assert made.broken
    assert allowed(made) == 0 and kube.lists == 1
