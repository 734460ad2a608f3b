"""clm.workflow.health_gate: which runs a rollout's health gate governs, how its checks count to a pass or a
failure that names the cluster and what was wrong, new problems, and CloudWatch alarms (in-process moto): one in
ALARM fails the check, one that does not exist too (a typo in a name template must not pass for a quiet alarm)."""

from __future__ import annotations

import pytest

from clm.model import PROBLEM_TYPES, Problem
from clm.rollout.policy import HealthGate
from clm.workflow.health_gate import HealthGateFailed, _alarm_findings, _digest, _new_problems, after_check
from clm.workflow.rollout_gate import governs
from tests.unit.test_workflow_rollout_gate import NEW, OLD, cluster

CLUSTER = "aws:123456789012:eu-central-1:t0"


def started(**gate: int) -> dict:
    """A gate's state as begin_gate makes it (hold 3 checks, 6 at most unless given)."""
    spec = HealthGate(hold_seconds=90, timeout_seconds=180, interval_seconds=30, **gate).spec(cluster("t0", "test", 0))
    return {"gated": True, "done": False, **spec, "checks": 0, "healthy": 0, "baseline": []}


def run(health: dict, outcomes: list[list[str]]) -> dict:
    for found in outcomes:
        health = after_check(CLUSTER, health, found)
    return health


def test_the_hold_is_consecutive_healthy_checks_and_a_fault_starts_it_again():
    health = run(started(), [[], [], ["node a not Ready"], [], []])
    assert (health["done"], health["checks"], health["healthy"]) == (False, 5, 2)
    assert run(health, [[]])["done"] is True


def test_the_gate_fails_as_soon_as_its_hold_cannot_be_made_in_time_naming_the_cluster_and_faults():
    faults = [f"Deployment kube-system/d{i}: 0 of 1 pods updated and available" for i in range(7)]
    health = run(started(), [faults, faults, faults])  # three more healthy checks would still pass: 6 at most
    assert health["findings"] == faults[:5]
    with pytest.raises(HealthGateFailed) as failed:
        after_check(CLUSTER, health, faults)
    assert str(failed.value) == (
        f"health gate: {CLUSTER} was not healthy for 90 s within 4 checks 30 s apart: "
        + "; ".join(faults[:5]) + "; and 2 more"
    )  # fmt: skip
    late = run(started(), [[], ["node a not Ready"], ["node a not Ready"], []])  # 2 more healthy checks will do
    with pytest.raises(HealthGateFailed, match=r"within 5 checks 30 s apart: node a not Ready$"):
        after_check(CLUSTER, late, ["node a not Ready"])


def test_only_a_run_bringing_a_cluster_its_rollouts_version_is_gated():
    assert governs(cluster("t0", "test", 0), f"{NEW}#h")
    assert not governs(cluster("new", "test", 0, current=""), f"{NEW}#h")  # a first provision
    assert not governs(cluster("edited", "test", 0, current=f"{NEW}#x"), f"{NEW}#h")  # a registry edit
    assert not governs(cluster("blocked", "test", 0, config_items={"cluster_update_block": "x"}), f"{NEW}#h")
    assert not governs(cluster("t0", "test", 0, current=f"{OLD}#h"), "")


def test_problems_recorded_since_the_gate_began_are_faults():
    old, new = Problem(title="old", type=PROBLEM_TYPES + "X"), Problem(title="new one", type=PROBLEM_TYPES + "Y")
    assert _new_problems(cluster("t0", "test", 0), []) == []
    with_problems = cluster("t0", "test", 0)
    with_problems.status.problems = [old, new]
    assert _new_problems(with_problems, [_digest(old)]) == ["problem recorded: new one"]


def test_alarms_in_alarm_or_missing_are_faults(aws) -> None:
    cloudwatch = aws.client("cloudwatch")
    for name in ("t0-slo", "t0-latency"):
        cloudwatch.put_metric_alarm(
            AlarmName=name, MetricName="Errors", Namespace="Team", Statistic="Sum", Period=60, EvaluationPeriods=1,
            Threshold=1.0, ComparisonOperator="GreaterThanThreshold",
        )  # fmt: skip
        cloudwatch.set_alarm_state(AlarmName=name, StateValue="OK", StateReason="quiet")
    assert _alarm_findings(cloudwatch, ["t0-slo", "t0-latency"]) == []
    cloudwatch.set_alarm_state(AlarmName="t0-slo", StateValue="ALARM", StateReason="5xx above 1%")
    assert _alarm_findings(cloudwatch, ["t0-slo", "t0-latency", "t0-typo"]) == [
        "alarm t0-typo not found",
        "alarm t0-slo in ALARM: 5xx above 1%",
    ]
