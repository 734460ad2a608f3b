"""The events of a cluster's run (source `clm.cluster` on CLM's bus; schemas in docs/events.md): its update started,
succeeded or failed. A detail names the cluster, where it is and the versions, bounded; never a config item. A
refusal by EventBridge is logged, never the run's failure (docs/events.md says why)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from clm.aws import client
from clm.model import Cluster, Problem
from clm.timestamps import format_time, utc_now
from clm.workflow.bus import EVENT_BUS_ENV, put_events
from clm.workflow.placement import of_cluster
from clm.workflow.run import PROVISION, RunPlan

SOURCE = "clm.cluster"
STARTED, SUCCEEDED, FAILED = "Cluster Update Started", "Cluster Update Succeeded", "Cluster Update Failed"
GATE_FAILED = "Cluster Health Gate Failed"  # also an update failed: the cluster did not stay healthy after it
MAX_TEXT = 256  # a field a registry writer chooses (alias, environment), a version, an error's name
MAX_TITLE = 500  # a problem's title, as a rollout's halt keeps it
ATTEMPTS = 2  # PutEvents calls for one event (a refused entry is put once more)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterEvent:
    """One event: its detail type and its detail (JSON-able)."""

    detail_type: str
    detail: dict[str, Any]


def started(cluster: Cluster, plan: RunPlan, execution: str) -> ClusterEvent:
    """A run that provisions or decommissions `cluster` (as read before its update) began its work."""
    return ClusterEvent(STARTED, _detail(cluster, plan, execution))


def succeeded(cluster: Cluster, plan: RunPlan, execution: str, version: str) -> ClusterEvent:
    """A run ended well: `cluster` (as read before the success was recorded) is at `version` (none once
    decommissioned)."""
    detail = _detail(cluster, plan, execution)
    return ClusterEvent(SUCCEEDED, detail | ({"version_to": _text(version)} if plan.action == PROVISION else {}))


def failed(cluster: Cluster, plan: RunPlan | None, execution: str, problem: Problem) -> ClusterEvent:
    """A run failed with `problem` (recorded on `cluster`, whose version stays); `plan`: None when the run failed
    before its begin decided one."""
    problem_fields = {"type": _text(problem.type), "title": _text(problem.title, MAX_TITLE)}
    return ClusterEvent(FAILED, _detail(cluster, plan, execution) | {"problem": problem_fields})


def failures(cluster: Cluster, plan: RunPlan | None, execution: str, problem: Problem) -> list[ClusterEvent]:
    """The events of a failed run: its update failed, and when its cluster failed its rollout's health gate
    (clm.workflow.health_gate), that too, the gate's findings in `problem.title`."""
    update = failed(cluster, plan, execution, problem)
    gate = problem.type.rsplit("/", 1)[-1] == "HealthGateFailed"
    return [update, ClusterEvent(GATE_FAILED, update.detail)] if gate else [update]


def _detail(cluster: Cluster, plan: RunPlan | None, execution: str) -> dict[str, Any]:
    """The fields every cluster event has (docs/events.md): who, where, which run, from which version to which."""
    target = plan.target if plan and plan.target else asdict(of_cluster(cluster))
    return {
        "cluster_id": _text(cluster.id),
        "alias": _text(cluster.alias),
        "environment": _text(cluster.environment),
        "account": _text(target.get("account", "")),
        "region": _text(target.get("region", "")),
        "action": plan.action if plan else "",
        "execution": _text(execution, 2 * MAX_TEXT),
        "version_from": _text(cluster.status.current_version),
        "version_to": _text(plan.desired_version if plan and plan.action == PROVISION else ""),  # none: decommission
        "at": format_time(utc_now()),
    }


def _text(value: str, limit: int = MAX_TEXT) -> str:
    """`value` cut to `limit` characters, an ellipsis marking a cut."""
    return value if len(value) <= limit else value[: limit - 1] + "…"


def publish(event: ClusterEvent, events_client: Callable[[], Any], bus: str) -> bool:
    """Put `event` on `bus` (nothing without one), a refused entry once more; False, and a warning logged, when
    EventBridge refuses it or cannot be called: a run never fails for its event."""
    if not bus:
        return True
    why = ""
    for _ in range(ATTEMPTS):
        try:
            refused = put_events(events_client(), bus, SOURCE, [(event.detail_type, event.detail)])
        except (BotoCoreError, ClientError) as error:
            refused = [(0, str(error))]
        if not refused:
            return True
        why = refused[0][1]
    log.warning("event bus %s: %s of %s not published: %s", bus, event.detail_type, event.detail["cluster_id"], why)
    return False


def announce(event: ClusterEvent) -> bool:
    """`publish` with CLM's client on the bus $CLM_EVENT_BUS names (the run function's)."""
    return publish(event, lambda: client("events"), os.environ.get(EVENT_BUS_ENV, ""))
