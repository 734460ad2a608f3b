"""CLM's force rules as a table: each rule alone forbids; all allow; when they would; siblings."""

from __future__ import annotations

from datetime import timedelta

import pytest

from clm.kube.force_rules import decide, force_decision, siblings_of
from clm.kube.settings import DrainSettings
from tests.unit.test_kube_pods import T0, make_pdb, make_pod

H = timedelta(hours=1)
M = timedelta(minutes=1)
SETTINGS = DrainSettings()  # CLM's defaults: grace 6h, pod 72h, healthy sibling 1h, unhealthy 6h, interval 5m
NOW = T0 + 100 * H
OLD = NOW - 80 * H  # older than every minimum


def _decision(*, drain_start=NOW - 7 * H, last_forced=None, pod_created=OLD, siblings=()):
    pod = make_pod("victim", created=pod_created)
    return force_decision(pod, SETTINGS, NOW, drain_start, last_forced, lambda: list(siblings))


@pytest.mark.parametrize(
    ("case", "kwargs", "allowed", "blocking_rule", "not_before"),
    [
        ("all rules allow", {}, True, None, None),
        ("drain grace period not over", {"drain_start": NOW - 5 * H}, False, "drain grace period 6h", NOW + H),
        ("grace period just over", {"drain_start": NOW - 6 * H}, True, None, None),
        ("forced recently", {"last_forced": NOW - 2 * M}, False, "force-evict interval 5m", NOW + 3 * M),
        ("forced long ago", {"last_forced": NOW - 6 * M}, True, None, None),
        ("pod too young", {"pod_created": NOW - 71 * H}, False, "minimum pod lifetime 72h", NOW + H),
        (
            "healthy sibling too young",
            {"siblings": [make_pod("s", created=NOW - 30 * M)]},
            False,
            "healthy sibling app/s younger than 1h",
            NOW + 30 * M,
        ),
        ("healthy sibling old enough", {"siblings": [make_pod("s", created=NOW - 2 * H)]}, True, None, None),
        (
            "unhealthy sibling too young",
            {"siblings": [make_pod("s", created=NOW - 2 * H, ready=False)]},
            False,
            "unhealthy sibling app/s younger than 6h",
            NOW + 4 * H,
        ),
        (
            "unhealthy sibling old enough",
            {"siblings": [make_pod("s", created=NOW - 7 * H, ready=False)]},
            True,
            None,
            None,
        ),
    ],
)
def test_force_rules_table(case, kwargs, allowed, blocking_rule, not_before):
    decision = _decision(**kwargs)
    assert decision.allowed is allowed, case
    assert decision.not_before == not_before
    if blocking_rule:
        assert decision.reason.startswith(f"no forced deletion yet: {blocking_rule}")
    else:
        assert decision.reason == "all force rules allow"


def test_several_rules_forbidding_are_all_named_and_the_latest_moment_counts():
    decision = _decision(drain_start=NOW - H, pod_created=NOW - 70 * H)
    assert "drain grace period 6h" in decision.reason and "minimum pod lifetime 72h" in decision.reason
    assert decision.not_before == NOW + 5 * H


def test_siblings_are_not_asked_while_the_clock_rules_forbid():
    asked = []
    force_decision(make_pod("victim", created=OLD), SETTINGS, NOW, NOW, None, lambda: asked.append(1) or [])
    assert asked == []


def test_siblings_are_pods_of_the_namespace_covered_by_a_budget_covering_the_pod():
    victim = make_pod("victim", labels={"app": "web", "tier": "front"})
    same_app = make_pod("web-2", labels={"app": "web"})
    same_tier = make_pod("api-1", labels={"app": "api", "tier": "front"})
    unrelated = make_pod("db-1", labels={"app": "db"})
    budgets = [
        make_pdb("web", {"matchLabels": {"app": "web"}}),
        make_pdb("front", {"matchLabels": {"tier": "front"}}),
        make_pdb("db", {"matchLabels": {"app": "db"}}),
    ]
    found = siblings_of(victim, [victim, same_app, same_tier, unrelated], budgets)
    assert [p["metadata"]["name"] for p in found] == ["web-2", "api-1"]
    assert siblings_of(make_pod("lonely", labels={"app": "x"}), [victim, same_app], budgets) == []


def test_finished_and_job_pods_are_no_siblings():
    victim = make_pod("victim", labels={"app": "web"})
    budgets = [make_pdb("web", {"matchLabels": {"app": "web"}})]
    done, failed = (
        make_pod("done", labels={"app": "web"}, phase="Succeeded"),
        make_pod("failed", labels={"app": "web"}, phase="Failed"),
    )
    job_pod, pending = (
        make_pod("job-1", labels={"app": "web"}, owner="Job"),
        make_pod("new", labels={"app": "web"}, phase="Pending"),
    )
    found = siblings_of(victim, [victim, done, failed, job_pod, pending], budgets)
    assert [p["metadata"]["name"] for p in found] == ["new"]


def test_decide_with_no_rules_allows():
    assert decide([], NOW).allowed
