"""The drain step's cordon and continue (`drain_blocked: continue`): a drain pass that would park (blocked only by
budgets that will not change on their own) records the blocked pods, their owners and budgets on the node
(clm.kube.blocked_drain), a `Drain Blocked` event starting its blocked spell; over a node the plan let be set
aside, the pass ends the node's turn instead of parking: it stays cordoned and the roll goes on."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from clm.kube.blocked_drain import blocking_pods, record_blocked
from clm.timestamps import utc_now
from clm.workflow.node_events import DRAIN_BLOCKED, drain_blocked_detail, publish


def announces(event: dict[str, Any], result: dict[str, Any]) -> bool:
    """Whether a drain pass's `result` is a blocked drain to record and announce: the plan asked for it (the
    replacement's `announce_blocked`) and only budgets that will not change on their own block the node (the pass
    would park)."""
    return bool(event["replacement"].get("announce_blocked") and result.get("park") and not result.get("done"))


def blocked(kube: Any, event: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """Record the node's blocked drain, until the moment the pass would park to, publishing `Drain Blocked` when
    the spell starts; returns the pass's result with `set_aside` (the replacement's: the node's turn ends),
    `blocked_since`, `until` and `blocked_pods` (each: namespace, name, owner_kind, owner_name, budget, reason)."""
    node = result["node"]
    now = utc_now()
    pods = blocking_pods(kube, node, result.get("blocked") or [])

    def starts(record: dict[str, Any]) -> None:
        detail = drain_blocked_detail(event["cluster_id"], event.get("node_pool", ""), event["replacement"], record)
        publish([(DRAIN_BLOCKED, detail)])

    until = now + timedelta(seconds=int(result["park"]["seconds"]))
    record = record_blocked(kube, node, pods, now, until, starts)
    aside = bool(event["replacement"].get("set_aside"))
    return {
        **result,
        "set_aside": aside,
        "blocked_since": record["since"],
        "until": record["until"],
        "blocked_pods": pods,
    }
