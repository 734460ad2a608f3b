"""Executions of the provision state machine, as the CLI needs them: which run for which cluster, start one,
wait for the one a registry change starts, and read an execution's history as it grows."""

from __future__ import annotations

import json
import time
from typing import Any

from clm.cli.errors import CliError

RECENT = 100  # StartExecution puts a new execution first in ListExecutions; a page covers what started meanwhile


def execution_name(arn: str) -> str:
    """The execution's name, the last part of its ARN (what the console shows)."""
    return arn.rsplit(":", 1)[-1]


def input_cluster(sfn: Any, execution_arn: str) -> str | None:
    """The `cluster_id` of the execution's input, or None when it has none."""
    try:
        data = json.loads(sfn.describe_execution(executionArn=execution_arn).get("input") or "{}")
    except ValueError:
        return None
    return data.get("cluster_id") if isinstance(data, dict) else None


def running_by_cluster(sfn: Any, state_machine_arn: str) -> dict[str, list[str]]:
    """ARNs of the RUNNING executions of the state machine, grouped by the cluster_id of their input."""
    running: dict[str, list[str]] = {}
    pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=state_machine_arn, statusFilter="RUNNING")
    for page in pages:
        for execution in page["executions"]:
            cluster_id = input_cluster(sfn, execution["executionArn"])
            if cluster_id is not None:
                running.setdefault(cluster_id, []).append(execution["executionArn"])
    return running


def start_provision(
    sfn: Any, state_machine_arn: str, cluster_id: str, reason: str, override_rollout: bool = False
) -> str:
    """Start a provision run of the cluster with the documented input (`override_rollout`: its version's rollout
    does not hold it); returns the execution ARN."""
    document = {"cluster_id": cluster_id, "reason": reason, **({"override_rollout": True} if override_rollout else {})}
    started = sfn.start_execution(stateMachineArn=state_machine_arn, input=json.dumps(document))
    return started["executionArn"]


def recent_executions(sfn: Any, state_machine_arn: str) -> set[str]:
    """ARNs of the newest executions of the state machine (a snapshot taken before triggering a run)."""
    page = sfn.list_executions(stateMachineArn=state_machine_arn, maxResults=RECENT)
    return {execution["executionArn"] for execution in page["executions"]}


def wait_for_new_execution(
    sfn: Any, state_machine_arn: str, cluster_id: str, known: set[str], timeout: float, poll_seconds: float = 1.0
) -> str:
    """The first execution for `cluster_id` that is not in `known`, waiting up to `timeout` seconds for it."""
    deadline = time.monotonic() + timeout
    checked = set(known)
    while True:
        page = sfn.list_executions(stateMachineArn=state_machine_arn, maxResults=RECENT)
        fresh = [e for e in reversed(page["executions"]) if e["executionArn"] not in checked]  # oldest first
        for execution in fresh:
            checked.add(execution["executionArn"])
            if input_cluster(sfn, execution["executionArn"]) == cluster_id:
                return execution["executionArn"]
        if time.monotonic() >= deadline:
            raise CliError(
                f"no run of cluster {cluster_id} started within {timeout:.0f} s: is the registry trigger "
                f"(stream -> registry_events -> bus) deployed? start one with `clm provision {cluster_id}`"
            )
        time.sleep(poll_seconds)


def new_events(sfn: Any, execution_arn: str, after: int) -> list[dict[str, Any]]:
    """History events of the execution with an id above `after`, oldest first.

    Reads newest first and stops at the first page that reaches `after`, so a poll of a long history costs one
    request (moto ignores reverseOrder and returns everything at once; the id filter covers both).
    """
    events: list[dict[str, Any]] = []
    request: dict[str, Any] = {"executionArn": execution_arn, "reverseOrder": True, "maxResults": 1000}
    while True:
        page = sfn.get_execution_history(**request)
        fresh = [event for event in page["events"] if event["id"] > after]
        events.extend(fresh)
        if len(fresh) < len(page["events"]) or not page.get("nextToken"):
            return sorted(events, key=lambda event: event["id"])
        request["nextToken"] = page["nextToken"]
