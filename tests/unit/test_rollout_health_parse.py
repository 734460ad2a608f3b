"""The `health:` section of a rollout policy: read into a HealthGate, its defaults, and every way a configuration
writer could make the gate mean something it does not say refused with the file and the line (a gate that could
never pass, checks that would hammer a cluster, alarm name templates reaching into Python objects)."""

from __future__ import annotations

import pytest

from clm.errors import RolloutPolicyError
from clm.model import Cluster
from clm.rollout.default import default_policy
from clm.rollout.parse import parse
from clm.rollout.policy import HealthGate

SOURCE = "config/cluster/rollout.yaml"
WAVES = "waves:\n  - {name: all}\n"
CLUSTER = Cluster("aws:123456789012:eu-central-1:kube-1", "kube-1", "aws:123456789012", "eu-central-1", "zalando-aws",
                  alias="kube-1-alias", environment="production")  # fmt: skip


def gate(health: str) -> HealthGate | None:
    return parse(f"health:\n{health}{WAVES}", SOURCE).health


def error(health: str) -> str:
    with pytest.raises(RolloutPolicyError) as raised:
        gate(health)
    return str(raised.value)


def test_every_key_is_read_and_a_cluster_gets_its_alarm_names():
    read = gate(
        "  hold: 5m\n  timeout: 20m\n  interval: 1m\n  namespaces: [kube-system, ingress]\n"
        "  workloads: [monitoring/deployment/prometheus, team/statefulset/db]\n"
        '  alarms: ["{alias}-availability", "slo-{environment}-{account}-{region}-{local_id}", "{id}"]\n'
    )
    assert read == HealthGate(
        hold_seconds=300, timeout_seconds=1200, interval_seconds=60, namespaces=("kube-system", "ingress"),
        workloads=("monitoring/deployment/prometheus", "team/statefulset/db"),
        alarms=("{alias}-availability", "slo-{environment}-{account}-{region}-{local_id}", "{id}"),
    )  # fmt: skip
    assert read.spec(CLUSTER) == {
        "interval_seconds": 60,
        "checks_needed": 5,
        "max_checks": 20,
        "namespaces": ["kube-system", "ingress"],
        "workloads": ["monitoring/deployment/prometheus", "team/statefulset/db"],
        "alarms": [
            "kube-1-alias-availability",
            "slo-production-123456789012-eu-central-1-kube-1",
            "aws:123456789012:eu-central-1:kube-1",
        ],
    }


def test_defaults_a_policy_without_the_section_and_health_false():
    assert parse(WAVES, SOURCE).health == HealthGate() == default_policy().health
    assert (HealthGate().checks_needed, HealthGate().max_checks, HealthGate().namespaces) == (6, 30, ("kube-system",))
    assert gate("  hold: 0\n").checks_needed == 1  # one healthy check
    assert gate("  namespaces: []\n").namespaces == ()  # nodes, problems and alarms only
    assert parse(f"health: false\n{WAVES}", SOURCE).health is None


@pytest.mark.parametrize(
    ("health", "says"),
    [
        ("  holds: 5m\n", "health: unknown key 'holds'"),
        ("  hold: 2d\n", "health: hold '2d' is not a duration"),
        ("  hold: 25h\n  timeout: 26h\n", "health: hold '25h' is longer than a day (24h)"),
        ("  interval: 1s\n", "health: interval is at least 5s"),  # a check a second: a cluster's API hammered
        ("  interval: 1h\n", "health: interval '1h' is longer than 10m"),
        ("  hold: 20m\n  timeout: 10m\n", "health: timeout is shorter than hold: no gate could pass"),
        ("  namespaces: kube-system\n", "health: namespaces: a list of at most 20"),
        ("  namespaces: [Kube_System]\n", "health: namespaces: 'Kube_System' is not a namespace name"),
        ("  namespaces: [" + ", ".join(f"n{i}" for i in range(21)) + "]\n", "a list of at most 20"),
        ("  workloads: [kube-system/pod/x]\n", "is not namespace/deployment|statefulset|daemonset/name"),
        ("  workloads: [../../etc/deployment/x]\n", "is not namespace/deployment|statefulset|daemonset/name"),
        ('  alarms: ["{id.__class__}"]\n', "with {field} one of id, local_id, alias"),
        ('  alarms: ["{config_items}"]\n', "with {field} one of"),
        ('  alarms: ["{alias"]\n', "with {field} one of"),
        ('  alarms: [""]\n', "1-255 characters"),
        ("  alarms: [" + "a" * 300 + "]\n", "1-255 characters"),
        ("  alarms: [3]\n", "health: alarms: 3 is not text"),
        ("  true\n", "health: false, or a mapping of hold"),
    ],
)
def test_what_a_gate_may_not_say_is_refused_with_the_line(health: str, says: str):
    message = error(health)
    assert says in message and f"{SOURCE}:" in message
