"""The hub benchmark's pure parts: rates over timestamps, the histories' and the audit log's parsing, the quota model
and the per-cluster workload."""

from __future__ import annotations

import json
import math
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))

import hub_model
import hub_rates
import hub_report
import hub_sandbox
from roll_bound import Simulation


def test_rate_counts_the_window_only_and_its_busiest_second():
    measured = hub_rates.rate([0.1, 0.5, 0.9, 1.2, 5.0, 11.0], start=0.0, end=10.0)
    assert measured == hub_rates.Rate(total=5, peak=3, mean=0.5)


def test_rate_weighs_events():
    assert hub_rates.rate([0.0, 0.2, 3.0], 0.0, 4.0, [2.0, 2.0, 1.0]) == hub_rates.Rate(5.0, 4.0, 1.25)


def test_peak_concurrency_touching_intervals_do_not_overlap():
    assert hub_rates.peak_concurrency([(0, 2), (1, 3), (2, 4), (2.5, 3)]) == 3
    assert hub_rates.peak_concurrency([(0, 1), (1, 2)]) == 1
    assert hub_rates.peak_concurrency([]) == 0


def _at(second: float) -> datetime:
    return datetime.fromtimestamp(1_000_000 + second, UTC)


def test_history_times_reads_starts_transitions_and_both_kinds_of_lambda_call():
    arn = "arn:aws:states:eu-central-1:123456789012:execution:clm-provision:run-1"
    events = [
        {"id": 1, "type": "ExecutionStarted", "timestamp": _at(0)},
        {"id": 2, "type": "TaskStateEntered", "timestamp": _at(0)},
        {"id": 3, "type": "LambdaFunctionScheduled", "timestamp": _at(0)},
        {"id": 4, "type": "LambdaFunctionStarted", "timestamp": _at(1), "previousEventId": 3},
        {"id": 5, "type": "LambdaFunctionSucceeded", "timestamp": _at(3), "previousEventId": 4},
        {"id": 6, "type": "WaitStateEntered", "timestamp": _at(3)},
        {"id": 7, "type": "TaskStarted", "timestamp": _at(4), "previousEventId": 6},
        {
            "id": 8,
            "type": "TaskSubmitted",
            "timestamp": _at(4.5),
            "previousEventId": 7,
            "taskSubmittedEventDetails": {"resourceType": "lambda"},
        },
        {
            "id": 9,
            "type": "TaskSubmitted",
            "timestamp": _at(5),
            "previousEventId": 7,
            "taskSubmittedEventDetails": {"resourceType": "states"},
        },
    ]
    times = hub_rates.history_times({arn: events})
    assert times.started == {"clm-provision": [1_000_000.0]}
    assert times.transitions == [1_000_000.0, 1_000_003.0]
    assert times.calls == [(1_000_001.0, 1_000_003.0), (1_000_004.0, 1_000_004.5)]


def test_audit_requests_per_cluster_token_complete_stage_only():
    lines = [
        json.dumps({"stage": "ResponseComplete", "user": {"username": "clm-hub-01"}, "stageTimestamp": ts})
        for ts in ("2026-01-01T00:00:00.500000Z", "2026-01-01T00:00:01Z")
    ]
    lines.append(json.dumps({"stage": "ResponseStarted", "user": {"username": "clm-hub-01"}, "stageTimestamp": "x"}))
    lines.append(json.dumps({"stage": "ResponseComplete", "user": {"username": "clm-admin-x"}, "stageTimestamp": "x"}))
    lines.append("")
    found = hub_rates.audit_requests(lines, prefix="clm-hub")
    assert list(found) == ["-01"]
    assert found["-01"][1] - found["-01"][0] == pytest.approx(0.5)


def test_dynamodb_units_weigh_reads_and_writes():
    stamped = [(1.0, "dynamodb:GetItem"), (2.0, "dynamodb:UpdateItem"), (3.0, "s3:GetObject"), (4.0, "dynamodb:Scan")]
    reads, writes = hub_rates.dynamodb_units(stamped, read_units=1, write_units=2)
    assert reads == [(1.0, 1), (4.0, 1)]
    assert writes == [(2.0, 2)]


def test_log_sampler_stamps_complete_lines_only(tmp_path):
    log = tmp_path / "calls.jsonl"
    log.write_text('{"action": "old"}\n')
    with hub_rates.LogSampler(log, interval=0.01) as sampler, log.open("a") as out:
        out.write('{"action": "a"}\n{"action": "b"')
    assert [record["action"] for _, record in sampler.records] == ["a"]


DEMAND = hub_model.Demand(start_burst=2, transitions=5, lambda_concurrency=0.5, read_units=1, write_units=0.5)


def test_bindings_divide_each_quota_by_one_clusters_demand_first_to_bind_first():
    found = hub_model.bindings(DEMAND, hub_model.quotas("eu-central-1"))
    clusters = {binding.quota.name: binding.clusters for binding in found}
    assert clusters == {
        "Step Functions StateTransition": 100,  # 500/s refill / 5
        "Step Functions StartExecution": 400,  # a bucket of 800 / 2 starts each
        "Lambda concurrent executions": 2000,
        "DynamoDB read request units (table)": 40000,
        "DynamoDB write request units (table)": 80000,
    }
    assert [b.clusters for b in found] == sorted(b.clusters for b in found)
    assert hub_model.safe_max_running(found, 1000) == 100
    assert hub_model.safe_max_running(found, 30) == 30


def test_large_regions_have_larger_step_functions_quotas():
    found = hub_model.bindings(DEMAND, hub_model.quotas("us-east-1"))
    assert found[0].quota.name == "Step Functions StateTransition"
    assert found[0].clusters == 300
    assert {b.quota.name: b.capacity for b in found}["Step Functions StartExecution"] == 1300


def test_no_demand_never_binds():
    idle = hub_model.Demand(0, 0, 0, 0, 0)
    assert all(math.isinf(b.clusters) for b in hub_model.bindings(idle, hub_model.quotas("eu-central-1")))


def test_fleet_hours_rounds_of_clusters_at_once():
    assert hub_model.fleet_hours(1000, 50, 100, 120, 600) == pytest.approx(10 * (600 + 6000) / 3600)
    assert hub_model.fleet_hours(10, 1, 3, 3600, 0) == 4


def test_each_cluster_gets_its_own_namespace_and_pool_pinned_pods():
    config = hub_sandbox.hub_config(Simulation(2, 4, 5.0, 3.0, 1.0), clusters=20)
    assert yaml.safe_load(config["cluster/rollout.yaml"])["max_concurrency"] == 20
    workload = config["cluster/manifests/example-app/02-workload.yaml"].replace("{{ cluster.local_id }}", "hub-07")
    documents = [d for d in yaml.safe_load_all(re.sub(r"\{\{.*?\}\}", "0", workload)) if d]
    assert {d["metadata"]["namespace"] for d in documents} == {"example-hub-07"}
    pods = [d["spec"]["template"]["spec"] for d in documents if d["kind"] in ("Deployment", "DaemonSet")]
    assert [p["nodeSelector"] for p in pods] == [{hub_sandbox.POOL_LABEL: "pool-hub-07"}] * 2
    assert pods[0]["terminationGracePeriodSeconds"] == 3
    namespace = config["cluster/manifests/example-app/01-namespace.yaml"]
    assert "name: example-{{ cluster.local_id }}" in namespace


def test_hub_clusters_are_distinct_with_their_own_secret_and_pool():
    clusters = hub_sandbox.hub_clusters(3, Simulation(2, 4, 5.0, 3.0, 1.0))
    assert [c.local_id for c in clusters] == ["hub-01", "hub-02", "hub-03"]
    assert len({c.id for c in clusters}) == 3 and all(c.id.endswith(c.local_id) for c in clusters)
    assert [c.config_items["kube_auth_secret"] for c in clusters] == ["clm/hub-01", "clm/hub-02", "clm/hub-03"]
    assert [c.node_pools[0].name for c in clusters] == ["pool-hub-01", "pool-hub-02", "pool-hub-03"]
    assert all(c.node_pools[0].min_size == c.node_pools[0].max_size == 2 for c in clusters)


def test_each_cluster_has_a_network_of_its_own():
    config = hub_sandbox.hub_config(Simulation(2, 4, 5.0, 3.0, 1.0), clusters=2)
    stack = config[hub_sandbox.CLUSTER_STACK]
    assert hub_sandbox.SUBNET not in stack
    assert '"{{ cluster.config_items.hub_net }}.{{ loop.index0 * 32 }}.0/19"' in stack
    clusters = hub_sandbox.hub_clusters(2, Simulation(2, 4, 5.0, 3.0, 1.0))
    assert [(c.config_items["vpc_cidr"], c.config_items["hub_net"]) for c in clusters] == [
        ("10.1.0.0/16", "10.1"),
        ("10.2.0.0/16", "10.2"),
    ]


def _measured() -> hub_report.Measured:
    rates = {name: hub_rates.Rate(total, 0, 0) for name, total in (("t", 300), ("r", 60), ("w", 30), ("s", 40))}
    return hub_report.Measured(
        clusters=20,
        nodes=60,
        window=100,
        run_seconds=1500,
        run_spread=(70, 75, 80),
        by_state={"Drain": 120},
        starts=rates["s"],
        starts_per_cluster=2,
        transitions=hub_rates.Rate(300, 40, 3),
        lambda_calls=rates["s"],
        lambda_seconds=600,
        lambda_peak=20,
        reads=rates["r"],
        writes=rates["w"],
        kube={"hub-01": hub_rates.Rate(100, 10, 1)},
        started_by_machine={"clm-provision": 20},
        runs_at_once=20,
        run_starts=(5, 10),
        sfn_api={},
        pdb_violations=0,
    )


def test_demand_of_a_rolling_cluster_is_per_second_of_its_run():
    demand = hub_report.demand_of(_measured())
    assert demand == hub_model.Demand(hub_model.STARTS_TOGETHER, 0.2, 1.0, 0.04, 0.02)  # peak 20 / 20 > 600/1500


def test_report_names_the_first_quota_to_bind_and_the_setting(capsys):
    hub_report.report(_measured(), "eu-central-1", fleet=1000, fleet_nodes=50, node_seconds=150, max_running=20)
    out = capsys.readouterr().out
    assert "First to bind: Step Functions StartExecution at 800 clusters" in out  # its bucket; Lambda at 1,000
    assert "clm:maxRunning" in out and "0 PDB violations" in out
    assert "1,000 clusters x 50 nodes, 10 at once, 150 s per node: 210.4 h" in out  # 100 rounds of 75 s + 7,500 s


def test_aligned_busiest_seconds_are_absorbed_by_the_full_bucket_and_one_refill():
    transition = next(q for q in hub_model.quotas("eu-central-1") if q.name.endswith("StateTransition"))
    assert hub_model.aligned_clusters(transition, busiest=2.0) == (800 + 500) / 2
    assert math.isinf(hub_model.aligned_clusters(transition, busiest=0))
