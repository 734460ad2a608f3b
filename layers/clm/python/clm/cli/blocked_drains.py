"""The drains blocked now in a run's node pool rolls, read from their execution histories (the drain passes'
results): set aside (`drain_blocked: continue`) or parked until CLM's force rules allow. For `clm status`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clm.cli.drain_text import blocked_text
from clm.cli.executions import new_events
from clm.cli.run_history import HistoryReader, json_object

SUCCEEDED_DETAILS = ("lambdaFunctionSucceededEventDetails", "taskSucceededEventDetails")


def blocked_drains(sfn: Any, run_arn: str) -> list[str]:
    """Each drain blocked now in the running roll executions `run_arn` started: `node: how`, by node."""
    children = HistoryReader().read(new_events(sfn, run_arn, 0)).children
    found: dict[str, str] = {}
    for child in children:
        if sfn.describe_execution(executionArn=child.arn)["status"] == "RUNNING":
            for node, drain in latest_blocked(new_events(sfn, child.arn, 0)).items():
                found[node] = f"{node}: {blocked_text(drain)}"
    return [found[node] for node in sorted(found)]


def latest_blocked(events: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Node -> its last drain pass's result, for the nodes whose drain that pass left set aside or parked (a node
    whose iteration ended terminated since, by Terminate or its drain, is not blocked any more)."""
    latest: dict[str, dict[str, Any]] = {}
    for event in events:
        entered = event.get("stateEnteredEventDetails")
        if entered and entered.get("name") in ("Terminate", "TerminatedByDrain"):
            latest.pop(str((json_object(entered.get("input")).get("replacement") or {}).get("node")), None)
            continue
        details = next((event[key] for key in SUCCEEDED_DETAILS if key in event), None)
        result = json_object((details or {}).get("output"))
        if "blocked" in result and result.get("node"):
            latest[str(result["node"])] = result
    return {
        node: drain
        for node, drain in latest.items()
        if not drain.get("done") and (drain.get("set_aside") or drain.get("park"))
    }
