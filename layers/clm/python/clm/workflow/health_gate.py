"""A rollout's health gate in a cluster's run: after its update, a run that brings the cluster its rollout's version
checks the cluster's health until it holds (the run passes) or the gate's time is up (HealthGateFailed: the run
fails and halts the rollout). One check per call; the state machine's Wait states space them."""

from __future__ import annotations

import hashlib
from typing import Any

from clm.aws import client
from clm.errors import ClmError
from clm.model import Cluster
from clm.registry.dynamodb import DynamoRegistry
from clm.workflow.settings import Settings

MAX_FINDINGS = 5


class HealthGateFailed(ClmError):
    """A cluster did not stay healthy for its gate's hold within the gate's timeout."""

    asl_name = "HealthGateFailed"


def _registry() -> DynamoRegistry:
    return DynamoRegistry(client("dynamodb"), Settings.from_env().registry_table)


def _digest(problem: Any) -> str:
    return hashlib.sha256(f"{problem.type}\n{problem.title}".encode()).hexdigest()[:16]


def begin_gate(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, plan}` -> `{gated: false}` for a run no rollout governs (a cluster's own change), else the gate
    of the fleet's rollout policy for the cluster (clm.rollout.policy.HealthGate.spec) and the check counts."""
    from clm.workflow.rollout_gate import governs, rollout_policy

    cluster = _registry().get(event["cluster_id"])
    if not governs(cluster, (event.get("plan") or {}).get("desired_version", "")):
        return {"gated": False}
    gate = rollout_policy(Settings.from_env().config_source).health
    if gate is None:
        return {"gated": False, "why": "the rollout policy says health: false"}
    baseline = sorted({_digest(problem) for problem in cluster.status.problems})
    return {"gated": True, "done": False, **gate.spec(cluster), "checks": 0, "healthy": 0, "baseline": baseline}


def check(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, target, health}` -> `health` after one more check of the cluster (see `after_check`)."""
    from clm.workflow.target_aws import of_event

    health, cluster, where = event["health"], _registry().get(event["cluster_id"]), of_event(event)
    found = _kube_findings(cluster, where, health) + _new_problems(cluster, health["baseline"])
    found += _alarm_findings(where.client("cloudwatch"), health["alarms"]) if health["alarms"] else []
    return after_check(cluster.id, health, found)


def after_check(cluster_id: str, health: dict[str, Any], found: list[str]) -> dict[str, Any]:
    """`health` after a check that `found` these faults: `done` once `checks_needed` consecutive checks found none;
    HealthGateFailed (naming the cluster and the faults) as soon as `max_checks` can no longer make the hold."""
    checks, healthy = health["checks"] + 1, 0 if found else health["healthy"] + 1
    if healthy >= health["checks_needed"]:
        return {**health, "checks": checks, "healthy": healthy, "done": True, "findings": []}
    if checks - healthy + health["checks_needed"] > health["max_checks"]:  # only after a check that found faults
        more = f"; and {len(found) - MAX_FINDINGS} more" if len(found) > MAX_FINDINGS else ""
        raise HealthGateFailed(
            f"health gate: {cluster_id} was not healthy for {health['interval_seconds'] * health['checks_needed']} s"
            f" within {checks} checks {health['interval_seconds']} s apart: {'; '.join(found[:MAX_FINDINGS])}{more}"
        )
    return {**health, "checks": checks, "healthy": healthy, "findings": found[:MAX_FINDINGS]}


def _kube_findings(cluster: Cluster, where: Any, health: dict[str, Any]) -> list[str]:
    """Nodes and workloads not healthy; an API server that does not answer is itself a finding."""
    from clm.kube.errors import KubeError
    from clm.kube.health import findings
    from clm.workflow.cluster_access import kube_client

    try:
        with kube_client(cluster, where) as kube:
            return findings(kube, health["namespaces"], health["workloads"])
    except KubeError as exc:
        return [f"API server: {str(exc)[:200]}"]


def _new_problems(cluster: Cluster, baseline: list[str]) -> list[str]:
    """Problems recorded on the cluster since the gate began."""
    return [f"problem recorded: {p.title[:200]}" for p in cluster.status.problems if _digest(p) not in baseline]


def _alarm_findings(cloudwatch: Any, names: list[str]) -> list[str]:
    """Each named alarm in ALARM, or missing (a name that matches nothing must not pass for a quiet alarm)."""
    alarms: dict[str, dict[str, Any]] = {}
    for page in cloudwatch.get_paginator("describe_alarms").paginate(
        AlarmNames=names, AlarmTypes=["MetricAlarm", "CompositeAlarm"]
    ):
        for alarm in page.get("MetricAlarms", []) + page.get("CompositeAlarms", []):
            alarms[alarm["AlarmName"]] = alarm
    found = [f"alarm {name} not found" for name in names if name not in alarms]
    return found + [
        f"alarm {name} in ALARM: {str(alarm.get('StateReason', ''))[:200]}"
        for name, alarm in alarms.items()
        if alarm.get("StateValue") == "ALARM"
    ]
