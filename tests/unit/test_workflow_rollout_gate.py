"""clm.workflow.rollout_gate with the rollouts kept in a (moto) registry table: reconcile starts the clusters taking a
new configuration version only as their rollout admits them, never holds a cluster's own change, holds everything
of a halted or paused rollout or under an invalid policy; a run checks its admission and a failed one halts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from clm.errors import RolloutPolicyError
from clm.model import PROBLEM_TYPES, Cluster, ClusterStatus, Problem
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.registry.rollouts import RolloutStore
from clm.rollout.parse import parse
from clm.rollout.state import ABORTED, COMPLETED, HALTED, KEY_PREFIX, ROLLING, Halt, RolloutState, rollout_key
from clm.version import desired_version
from clm.workflow.reconcile import select
from clm.workflow.rollout_gate import RolloutEventsRefused, gate, halt_on_failure, in_rollouts, look, run_hold

TABLE = "clm-registry"
OLD, NEW = "config-old", "config-new"
T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
POLICY = parse(
    """
waves:
  - {name: canary, size: 1, bake: 30m}
  - {name: test, select: {environment: test}, concurrency: 2, bake: 1h}
  - {name: production, concurrency: 2}
""",
    "rollout.yaml",
)


def cluster(name: str, environment: str, criticality: int, current: str = f"{OLD}#h", **fields) -> Cluster:
    return Cluster(
        f"aws:123456789012:eu-central-1:{name}", name, "aws:123456789012", "eu-central-1", "zalando-aws",
        environment=environment, criticality_level=criticality, status=ClusterStatus(current_version=current),
        **fields,
    )  # fmt: skip


def fleet() -> dict[str, Cluster]:
    made = [cluster(f"t{i}", "test", i) for i in range(3)] + [cluster(f"p{i}", "production", i + 3) for i in range(3)]
    return {c.id: c for c in made}


def at_new(cluster: Cluster) -> str:
    """The cluster's version once at NEW."""
    return str(desired_version(cluster, NEW))


def problem(title: str, error: str = "ApplyError") -> Problem:
    return Problem(title=title, type=PROBLEM_TYPES + error)


def cid(name: str) -> str:
    return f"aws:123456789012:eu-central-1:{name}"


@pytest.fixture
def store(aws) -> RolloutStore:
    client = aws.client("dynamodb")
    create_table(client, TABLE)
    return RolloutStore(client, TABLE)


def run_gate(
    store: RolloutStore, clusters: dict[str, Cluster], now: datetime = T0, policy=lambda: POLICY, publish=None
):
    versions = {cluster_id: NEW for cluster_id in clusters}
    needing = select(clusters.values(), NEW, now.timestamp())
    return gate(needing, clusters, versions, in_rollouts, store, policy, now, publish or (lambda events: None))


def test_a_looks_events_are_published_before_anything_is_kept(store) -> None:
    published = []

    def refused(events) -> None:
        published.append([event.detail_type for event in events])
        raise RolloutEventsRefused("event bus clm: rollout events refused")

    with pytest.raises(RolloutEventsRefused):
        run_gate(store, fleet(), publish=refused)
    assert published == [["Rollout Started", "Rollout Wave Started"]] and store.get(NEW) is None
    run_gate(store, fleet(), publish=lambda events: published.append([e.detail_type for e in events]))
    run_gate(store, fleet(), publish=lambda events: published.append([e.detail_type for e in events]))
    assert published[1:] == [["Rollout Started", "Rollout Wave Started"], []]  # made again, then never twice


def test_a_new_version_starts_the_canary_alone_and_admits_it(store) -> None:
    gated = run_gate(store, fleet())
    assert [s.cluster_id for s in gated.allowed] == [cid("t0")]
    assert len(gated.held) == 5
    assert gated.held[0]["waiting_for"] == "wave canary: its runs"
    kept = store.get(NEW)
    assert kept is not None and kept.admitted == {cid("t0")} and kept.state == ROLLING
    assert kept.waves["canary"].started_at == T0
    assert gated.rolling and gated.report()["rollouts"][0]["wave"] == "canary"


def test_a_clusters_own_change_is_never_held(store) -> None:
    clusters = fleet()
    own = [
        cluster("new", "production", 9, current=""),  # a first provision
        cluster("gone", "production", 9, lifecycle_status="decommission-requested"),
        cluster("edited", "production", 9, current=f"{NEW}#other-spec"),  # at the version: a registry edit
    ]
    clusters |= {c.id: c for c in own}
    gated = run_gate(store, clusters)
    assert {s.cluster_id for s in gated.allowed} == {cid("t0"), cid("new"), cid("gone"), cid("edited")}


def test_the_next_wave_starts_after_the_bake_and_an_interrupted_admitted_run_goes_on(store) -> None:
    clusters = fleet()
    run_gate(store, clusters)
    clusters[cid("t0")].status = ClusterStatus(current_version=at_new(clusters[cid("t0")]))
    baking = run_gate(store, clusters, T0 + timedelta(minutes=5))
    assert baking.allowed == [] and baking.wake_at == T0 + timedelta(minutes=35)
    baked = run_gate(store, clusters, T0 + timedelta(minutes=35))
    assert [s.cluster_id for s in baked.allowed] == [cid("t1"), cid("t2")]
    clusters[cid("t1")].status = ClusterStatus(current_version=f"{OLD}#h", next_version=f"{NEW}#h")  # interrupted
    again = run_gate(store, clusters, T0 + timedelta(minutes=50))
    assert [s.cluster_id for s in again.allowed] == [cid("t1"), cid("t2")]


@pytest.mark.parametrize("how", ["halt", "abort", "pause"])
def test_a_halted_aborted_or_paused_rollout_starts_nothing_and_holds_the_admitted(store, how: str) -> None:
    clusters = fleet()
    run_gate(store, clusters)
    clusters[cid("t0")].status = ClusterStatus(current_version=f"{OLD}#h", next_version=f"{NEW}#h")
    if how == "halt":
        assert store.halt(NEW, Halt(cid("t0"), "arn:run", "step Apply: bad", T0))
    elif how == "abort":
        assert store.abort(NEW)
    else:
        store.pause("arn:aws:iam::123456789012:user/ops", "INC-1", T0)
    gated = run_gate(store, clusters, T0 + timedelta(minutes=1))
    assert gated.allowed == []
    assert gated.rolling is (how == "pause")  # paused, it still rolls: its started runs go on
    assert {entry["cluster_id"] for entry in gated.held} == set(clusters)
    expected = {"halt": f"rollout halted: {cid('t0')}: step Apply: bad", "abort": "rollout aborted"}
    assert gated.held[0]["waiting_for"] == expected.get(how, "rollout paused (clm rollout resume)")
    hold = run_hold(store)
    assert hold(clusters[cid("t0")], f"{NEW}#h") != ""
    if how == "pause":
        assert store.unpause() and not store.unpause()
        assert [s.cluster_id for s in run_gate(store, clusters, T0 + timedelta(minutes=2)).allowed] == [cid("t0")]


def test_an_invalid_policy_holds_every_new_version_but_no_own_change(store) -> None:
    clusters = fleet() | {cid("new"): cluster("new", "test", 0, current="")}

    def broken():
        raise RolloutPolicyError("waves: a non-empty list", "cluster/rollout.yaml", 3)

    gated = run_gate(store, clusters, policy=broken)
    assert [s.cluster_id for s in gated.allowed] == [cid("new")]
    assert "cluster/rollout.yaml:3" in gated.report()["rollout_policy_error"]
    assert gated.held[0]["waiting_for"].startswith("rollout policy invalid: ")
    assert store.get(NEW) is None


def test_a_run_checks_its_admission(store) -> None:
    clusters = fleet()
    hold = run_hold(store)
    assert "has not started" in hold(clusters[cid("t0")], f"{NEW}#h")
    run_gate(store, clusters)
    assert hold(clusters[cid("t0")], f"{NEW}#h") == ""
    assert hold(clusters[cid("p2")], f"{NEW}#h") == (
        f"waits for its wave in the rollout of configuration {NEW} (clm rollout status)"
    )
    assert hold(cluster("new", "test", 0, current=""), f"{NEW}#h") == ""  # a first provision
    assert hold(cluster("edited", "test", 0, current=f"{NEW}#x"), f"{NEW}#h") == ""  # its own change


def test_a_failed_run_halts_the_version_it_brought_not_a_clusters_own_change(store) -> None:
    run_gate(store, fleet())
    own = cluster("edited", "test", 0, current=f"{NEW}#x")
    assert not halt_on_failure(store, own, f"{NEW}#h", "arn:run-1", problem("step Stacks: bad instance type"))
    blocked = problem("step RollNodePool: UpdateBlocked: updates blocked by config item", "UpdateBlocked")
    assert not halt_on_failure(store, fleet()[cid("t0")], f"{NEW}#h", "arn:run-0", blocked)  # an operator's stop
    assert store.get(NEW).state == ROLLING
    assert halt_on_failure(store, fleet()[cid("t0")], f"{NEW}#h", "arn:run-2", problem("step Apply: bad manifest"))
    kept = store.get(NEW)
    assert (kept.state, kept.halt.cluster_id, kept.halt.problem) == (HALTED, cid("t0"), "step Apply: bad manifest")
    assert halt_on_failure(store, fleet()[cid("t0")], f"{NEW}#h", "arn:run-2", problem("step Apply: bad manifest"))
    # the same run's step retried (its event refused): halted again, its event made again
    assert not halt_on_failure(store, fleet()[cid("t1")], f"{NEW}#h", "arn:run-3", problem("later"))  # halted once
    assert store.resume(NEW) and store.get(NEW).halt is None
    assert store.abort(NEW) and not store.abort(NEW) and store.get(NEW).state == ABORTED


def test_two_reconciles_starting_one_rollout_keep_one(store) -> None:
    first = store.start(RolloutState(NEW, T0))
    second = store.start(RolloutState(NEW, T0 + timedelta(seconds=1)))
    assert second == first and [state.version for state in store.list()] == [NEW]


def test_rollout_items_are_not_clusters_of_the_registry(store, aws) -> None:
    registry = DynamoRegistry(aws.client("dynamodb"), TABLE)
    registry.put(fleet()[cid("t0")])
    run_gate(store, fleet())
    store.pause("arn:ops", "", T0)
    clusters, invalid = registry.list_clusters_report()
    assert ([c.id for c in clusters], invalid) == ([cid("t0")], [])
    raw = aws.client("dynamodb").scan(TableName=TABLE)["Items"]
    assert {item["id"]["S"] for item in raw} == {cid("t0"), rollout_key(NEW), f"{KEY_PREFIX}pause"}


def test_status_looks_without_writing(store) -> None:
    clusters = fleet()
    [progress] = look(list(clusters.values()), {c: NEW for c in clusters}, store, POLICY, T0)
    assert progress.start == (cid("t0"),) and store.get(NEW) is None
    assert look(list(clusters.values()), {c: OLD for c in clusters}, store, POLICY, T0) == []


def test_no_registry_file_can_name_a_cluster_as_a_rollout_item() -> None:
    from pathlib import Path

    from clm.errors import ValidationError
    from clm.registry.clusters_yaml import load_clusters

    examples = (Path(__file__).resolve().parents[2] / "examples" / "clusters.yaml").read_text()
    for forged in (f"{KEY_PREFIX}pause", rollout_key(NEW)):
        text = examples.replace("id: aws:123456789012:eu-central-1:kube-1", f"id: {forged}", 1)
        with pytest.raises(ValidationError, match=r"clusters.yaml:4: cluster rollout#.* is not valid"):
            load_clusters(text, source="clusters.yaml")


def test_a_completed_rollouts_straggler_goes_once_unblocked(store) -> None:
    """A cluster blocked (cluster_update_block) is left out of its rollout, which completes without it; unblocked,
    it takes the version (the fleet has proven it) and its run is not held."""
    clusters = fleet()
    state = RolloutState(NEW, T0, state=COMPLETED, completed_at=T0, admitted=frozenset({cid("t0")}))
    store.start(state)
    clusters[cid("t0")].status = ClusterStatus(current_version=f"{OLD}#h", next_version=f"{NEW}#h")  # was stopped
    for other in ("t1", "t2", "p0", "p1"):  # p2 was blocked from the start: never admitted
        clusters[cid(other)].status = ClusterStatus(current_version=at_new(clusters[cid(other)]))
    gated = run_gate(store, clusters, T0 + timedelta(hours=1))
    assert [s.cluster_id for s in gated.allowed] == [cid("t0"), cid("p2")] and gated.held == []
    assert run_hold(store)(clusters[cid("t0")], f"{NEW}#h") == ""
    assert store.get(NEW).state == COMPLETED


def test_a_resumed_rollout_retries_its_failed_cluster_under_a_new_name(store) -> None:
    """The run that halted the rollout failed in this 15-minute window under its reconcile name: after `resume`,
    the retry is named anew, so Step Functions starts it now instead of answering with the failed one."""
    clusters = fleet()
    [first] = run_gate(store, clusters).allowed
    clusters[cid("t0")].status = ClusterStatus(current_version=f"{OLD}#h", next_version=first.desired_version)
    store.halt(NEW, Halt(cid("t0"), "arn:run", "step Apply: bad", T0))
    assert run_gate(store, clusters, T0 + timedelta(minutes=1)).allowed == []
    assert store.resume(NEW) and store.get(NEW).resumes == 1
    [retry] = run_gate(store, clusters, T0 + timedelta(minutes=2)).allowed
    assert retry.cluster_id == cid("t0") and retry.execution_name != first.execution_name
    assert retry.execution_name.startswith("t0-") and retry.desired_version == first.desired_version
