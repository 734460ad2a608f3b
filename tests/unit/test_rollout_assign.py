"""clm.rollout.assign: every cluster in exactly one wave (the first that takes it, `unmatched` for the rest), in
the wave's order, with its concurrency as a count; the built-in policy on the example registries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm.rollout.assign import assign
from clm.rollout.default import default_policy
from clm.rollout.parse import parse
from tests.strategies import clusters as cluster_strategy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def cluster(name: str, environment: str = "test", criticality: int = 0, **fields: object) -> Cluster:
    account = fields.pop("account", "123456789012")
    region = str(fields.pop("region", "eu-central-1"))
    return Cluster(
        f"aws:{account}:{region}:{name}", name, f"aws:{account}", region, "zalando-aws",
        environment=environment, criticality_level=criticality, **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def names(assignments) -> list[tuple[str, list[str], int]]:
    return [(a.wave.name, [c.local_id for c in a.clusters], a.concurrency) for a in assignments]


FLEET = [
    cluster("prod-b", "production", 3),
    cluster("prod-a", "production", 1),
    cluster("stage", "staging", 1),
    cluster("test-2", "test", 1),
    cluster("test-1", "test", 0),
    cluster("e2e", "e2e", 0),
    cluster("prod-c", "production", 1),
]


def test_the_default_puts_a_canary_first_then_pre_production_then_production_least_critical_first():
    assert names(assign(FLEET, default_policy())) == [
        ("canary", ["test-1"], 1),  # criticality 0, then test before e2e (not listed: after production)
        ("pre-production", ["e2e", "test-2", "stage"], 2),  # criticality 0 first; then test before staging
        ("production", ["prod-a", "prod-c", "prod-b"], 2),
    ]


def test_the_default_on_the_example_registries():
    for registry in (EXAMPLES / "clusters.yaml", EXAMPLES / "eks" / "clusters.yaml"):
        fleet = load_clusters(registry.read_text(), str(registry))
        waves = assign(fleet, default_policy())
        assert sorted(c.id for w in waves for c in w.clusters) == sorted(c.id for c in fleet)
        assert len(waves[0].clusters) == 1 and waves[0].clusters[0].environment == "test"
    kube1, kube2 = load_clusters((EXAMPLES / "clusters.yaml").read_text())
    assert names(assign([kube2, kube1], default_policy())) == [
        ("canary", ["kube-1"], 1),
        ("pre-production", [], 1),
        ("production", ["kube-2"], 1),
    ]


def test_no_clusters_gives_the_waves_empty_and_no_unmatched_wave():
    assert names(assign([], default_policy())) == [("canary", [], 1), ("pre-production", [], 1), ("production", [], 1)]


def test_clusters_no_wave_takes_go_to_a_last_wave_one_at_a_time():
    policy = parse("waves:\n  - name: prod\n    select: {environment: production}\n    concurrency: 5\n", "p")
    assert names(assign(FLEET, policy)) == [
        ("prod", ["prod-a", "prod-c", "prod-b"], 3),  # capped by max_concurrency (3 by default)
        ("unmatched", ["e2e", "test-1", "stage", "test-2"], 1),
    ]


def test_all_in_one_wave_with_a_percentage_rounded_up():
    policy = parse("max_concurrency: 100\nwaves:\n  - name: all\n    concurrency: 30%\n", "p")
    [wave] = assign(FLEET, policy)
    assert (len(wave.clusters), wave.concurrency) == (7, 3)  # 2.1 -> 3
    assert [w.concurrency for w in assign(FLEET[:1], policy)] == [1]  # 0.3 -> 1
    assert [w.concurrency for w in assign([], policy)] == [1]  # at least 1


def test_order_descending_and_by_other_fields_then_id():
    policy = parse(
        "waves:\n  - name: a\n    order: [-criticality, region]\n",
        "p",
    )
    fleet = [cluster("x", criticality=1, region="us-east-1"), cluster("y", criticality=1), cluster("z", criticality=2)]
    assert names(assign(fleet, policy))[0][1] == ["z", "y", "x"]


def test_selectors_must_all_match_and_exclude_and_size_leave_clusters_to_later_waves():
    policy = parse(
        """waves:
  - name: beta-eu
    select: {channel: beta, region: eu-central-1, config_items: {team: [a, b]}}
  - name: two
    exclude: {account: '210987654321'}
    size: 2
  - name: listed
    select: {clusters: ['aws:210987654321:eu-central-1:other']}
""",
        "p",
    )
    fleet = [
        cluster("beta", channel="beta", config_items={"team": "b"}),
        cluster("beta-us", channel="beta", region="us-east-1", config_items={"team": "a"}),
        cluster("beta-c", channel="beta", config_items={"team": "c"}),
        cluster("other", account="210987654321"),
        cluster("last", criticality=2),
    ]
    assert names(assign(fleet, policy)) == [
        ("beta-eu", ["beta"], 1),
        ("two", ["beta-c", "beta-us"], 1),
        ("listed", ["other"], 1),
        ("unmatched", ["last"], 1),
    ]


def test_a_wave_selecting_nothing_is_kept_empty_in_its_place():
    policy = parse("waves:\n  - name: none\n    select: {environment: nowhere}\n  - name: all\n", "p")
    assert [(name, len(ids)) for name, ids, _ in names(assign(FLEET, policy))] == [("none", 0), ("all", 7)]


@given(st.lists(cluster_strategy(), max_size=20, unique_by=lambda c: c.id), st.integers(1, 5))
def test_every_cluster_is_in_exactly_one_wave_and_the_plan_does_not_depend_on_the_input_order(fleet, size):
    policy = replace(
        default_policy(), waves=(replace(default_policy().waves[0], size=size), *default_policy().waves[1:])
    )
    plan = assign(fleet, policy)
    assert sorted(c.id for w in plan for c in w.clusters) == sorted(c.id for c in fleet)
    assert names(assign(list(reversed(fleet)), policy)) == names(plan)
    assert all(1 <= w.concurrency <= policy.max_concurrency for w in plan)
