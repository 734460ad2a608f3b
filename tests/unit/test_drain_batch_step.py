"""The DrainBatch step's decision after a batch pass (clm.workflow.drain_steps.after_batch_pass)."""

from __future__ import annotations

from typing import Any

from clm.cli.drain_text import drain_batch_line, drain_line
from clm.workflow.drain_steps import after_batch_pass, drain

DECISION = {
    "action": "replace",
    "batch": True,
    "wait_seconds": 4,
    "replace": [
        {"instance_id": "i-1", "node": "n1", "decrement": False},
        {"instance_id": "i-2", "node": "n2", "decrement": False},
        {"instance_id": "i-3", "node": None, "decrement": False},  # never became a Node: nothing to drain
    ],
}


def result(node: str, done: bool, wait: int = 0, park: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "node": node,
        "done": done,
        "wait_seconds": wait,
        "evicted": ["ns/a"],
        "forced": [],
        "blocked": [] if done else [{"pod": "ns/b", "pdb": "ns/web", "reason": "r"}],
        "terminating": [],
        "park": park,
        "budgets_seen": {} if done else {"ns/web": "7"},
    }


def test_drained_nodes_are_marked_and_the_batch_goes_on_for_the_others():
    after = after_batch_pass(DECISION, {"n1": result("n1", True), "n2": result("n2", False, wait=1)}, {})
    assert [r.get("drained") for r in after["replace"]] == [True, None, True]
    assert after["batch_drain"] == {
        "passes": 1,
        "again": True,
        "wait_seconds": 1,
        "seen": {"n2": {"ns/web": "7"}},
        "nodes": {
            "n1": {"done": True, "evicted": 1, "forced": 0, "blocked": 0, "terminating": 0, "refused": 0},
            "n2": {"done": False, "evicted": 1, "forced": 0, "blocked": 1, "terminating": 0, "refused": 0},
        },
        "unterminated": 3,  # none terminated by this pass: Replace terminates them
    }
    assert after["wait_seconds"] == 4 and after["batch"]  # the decision's own fields are kept
    second = after_batch_pass(after, {"n2": result("n2", True)}, {"n2": ("InProgress", 1764324000.5)})
    assert [r.get("drained") for r in second["replace"]] == [True, True, True]
    assert [r.get("terminated") for r in second["replace"]] == [None, "InProgress", None]
    assert second["replace"][1]["terminated_at"] == 1764324000.5
    assert second["batch_drain"]["unterminated"] == 2  # n1, and i-3 (no Node): Replace terminates them
    assert (second["batch_drain"]["passes"], second["batch_drain"]["again"]) == (2, False)
    line = "DrainBatch: 3 of 3 nodes drained (1 terminated); this pass 1 evicted, 0 blocked"
    assert drain_batch_line({}, second) == (line, "")


def test_nodes_that_would_park_leave_the_batch_for_passes_of_their_own():
    """Only budgets that do not change on their own block them: the batch ends, and each node's own passes park
    it, or set it aside (drain_blocked: continue), as a single node's drain does."""
    park = {"seconds": 3600, "since": "2026-11-28T09:00:00Z"}
    after = after_batch_pass(DECISION, {"n1": result("n1", False, 3599, park), "n2": result("n2", True)}, {})
    assert after["batch_drain"]["again"] is False
    assert [r.get("drained") for r in after["replace"]] == [None, True, True]
    line, colour = drain_batch_line({}, after)
    assert line.endswith("each node left goes on with passes of its own") and colour == "yellow"


def test_replace_finds_a_node_the_batch_drained_done_without_a_pass():
    """Replace's Drain of a node DrainBatch drained returns at once (no rendering read, no Kubernetes call, no pass
    charged to the execution's budget), so Replace terminates it: the one-node path keeps its states."""
    event = {"cluster_id": "c", "rendering": "nowhere", "replacement": {"node": "n1", "drained": True}}
    assert drain(event) == {
        "node": "n1",
        "done": True,
        "wait_seconds": 0,
        "passes": 0,
        "set_aside": False,
        "batched": True,
    }
    assert drain_line({}, drain(event)) is None  # --follow shows the batch's line, not this one


def test_replace_ends_the_iteration_of_a_node_the_batch_terminated():
    """Its Drain says `terminated` (the Drained choice then ends the iteration: no Terminate call)."""
    replacement = {"node": "n1", "drained": True, "terminated": "InProgress", "terminated_at": 1764324000.5}
    event = {"cluster_id": "c", "rendering": "nowhere", "replacement": replacement}
    assert drain(event)["terminated"] == "InProgress" and drain(event)["done"]


def test_a_batch_pass_that_keeps_evicting_goes_on_within_its_limit(monkeypatch):
    """Each eviction moves the pass's deadline (and every node drain's) another `extension` out, never past the
    pass's limit: evictions a pod's start-up apart keep one pass going, no Wait leaves the budget open between."""
    from types import SimpleNamespace

    from clm.kube import batch_drain

    now = [100.0]
    monkeypatch.setattr(batch_drain.time, "monotonic", lambda: now[0])
    drainers = {"n1": SimpleNamespace(deadline=105.0), "n2": SimpleNamespace(deadline=105.0)}
    batch = batch_drain._Batch(None, drainers, None, None, (105.0, 160.0, 5.0), {}, lambda node: None)
    now[0] = 104.0
    batch._extend()
    assert batch.deadline == 109.0 and {d.deadline for d in drainers.values()} == {109.0}
    now[0] = 158.0
    batch._extend()
    assert batch.deadline == 160.0 and {d.deadline for d in drainers.values()} == {160.0}
