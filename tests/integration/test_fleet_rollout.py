"""A configuration change goes out to a fleet of six clusters in three waves (issue 28), end to end on the sandbox with
IAM enforced: reconcile admits each wave's clusters at the wave's concurrency once the previous wave is done and has
baked (start and stop times prove the order, the bake and the concurrency); a version whose manifest fails on the
canary halts its rollout there (no execution for any other cluster, which keep their version); a registry edit of a
cluster whose wave has not come is held by its run; a newer good version supersedes it and starts again from the
canary; `clm rollout pause` lets the canary's run in flight finish and starts
nothing more, `clm rollout resume` goes on. The rollouts' and the clusters' events, taken by rules to SQS queues, tell
the same story (docs/events.md). Zalando's CLM has no waves: its controller takes clusters in turn, least
recently handled first, `--concurrent-updates` (1) at a time (controller/controller.go, cluster_list.go)."""

from __future__ import annotations

import dataclasses
import json
import time
from datetime import datetime
from typing import Any

import pytest

from clm.model import PROBLEM_TYPES, Cluster
from clm.registry.rollouts import RolloutStore
from clm.rollout.progress import config_version_of
from clm.rollout.state import HALTED, ROLLING
from clm_sandbox.controlplane import ControlPlane
from tests.integration.deployment import Deployment
from tests.integration.fleet import (
    capture_events,
    config_versions,
    received,
    register_fleet,
    rollout_cli,
    upload_probe,
    working_runs,
)

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

BAKE = 8  # seconds of wall-clock time: reconcile compares real times (Wait states are scaled, bakes are not)
POLICY = f"""\
max_concurrency: 2
waves:
  - {{name: canary, size: 1, bake: {BAKE}s}}
  - {{name: test, select: {{environment: test}}, concurrency: 2, bake: {BAKE}s}}
  - {{name: production, concurrency: 2}}
"""
WAVES = {"canary": ["t0"], "test": ["t1", "t2"], "production": ["p0", "p1", "p2"]}


@pytest.fixture
def fleet(deployment: Deployment, control_plane: ControlPlane) -> list[Cluster]:
    """The fleet under POLICY."""
    return register_fleet(deployment, control_plane, POLICY)


def assert_waves(runs: dict[str, dict[str, Any]]) -> None:
    """Each wave's runs start after the previous wave's last run ended and baked; at most 2 run at once."""
    assert sorted(runs) == sorted(name for names in WAVES.values() for name in names)
    previous_end: datetime | None = None
    for wave, names in WAVES.items():
        starts = [runs[name]["startDate"] for name in names]
        if previous_end is not None:  # the bake counts from when reconcile saw the wave done: after the last success
            earliest = min(starts)
            assert (earliest - previous_end).total_seconds() >= BAKE - 1, (wave, earliest, previous_end)
        previous_end = max(runs[name]["stopDate"] for name in names)
    moments = sorted([(r["startDate"], 1) for r in runs.values()] + [(r["stopDate"], -1) for r in runs.values()],
                     key=lambda moment: (moment[0], moment[1]))  # fmt: skip
    running = peak = 0
    for _, change in moments:
        running += change
        peak = max(peak, running)
    assert peak <= 2, runs
    assert runs["p2"]["startDate"] >= min(runs["p0"]["stopDate"], runs["p1"]["stopDate"])  # production: 2 at a time


def of_version(events: list[dict[str, Any]], version: str) -> list[tuple[str, str]]:
    """The (detail type, wave) of the events of `version`, in the order they happened."""
    mine = [e for e in events if e["detail"]["version"] == version]
    ordered = sorted(mine, key=lambda e: (e["detail"]["at"], ORDER.index(e["detail-type"])))
    return [(e["detail-type"], e["detail"].get("wave", "")) for e in ordered]


ORDER = ["Rollout Started", "Rollout Wave Completed", "Rollout Wave Started", "Rollout Halted", "Rollout Completed"]
THROUGH = [
    ("Rollout Started", ""),
    ("Rollout Wave Started", "canary"),
    ("Rollout Wave Completed", "canary"),
    ("Rollout Wave Started", "test"),
    ("Rollout Wave Completed", "test"),
    ("Rollout Wave Started", "production"),
    ("Rollout Wave Completed", "production"),
    ("Rollout Completed", ""),
]


def test_a_change_goes_out_in_waves_a_bad_one_halts_at_the_canary_and_pause_holds_the_next_wave(
    deployment: Deployment, fleet: list[Cluster]
) -> None:
    store = RolloutStore(deployment.session.client("dynamodb"), deployment.outputs["RegistryTableName"])
    queue, updates = capture_events(deployment, "clm.rollout"), capture_events(deployment, "clm.cluster")
    since = len(deployment.executions(deployment.provision))
    before = config_versions(deployment, fleet)
    assert len(set(before.values())) == 1

    # A good version: wave by wave, each after the previous one's bake.
    known = len(deployment.executions(deployment.provision))
    upload_probe(deployment, "probe", "1")
    runs = working_runs(deployment, known)
    assert all(run["status"] == "SUCCEEDED" for run in runs.values())
    assert_waves(runs)
    good = config_versions(deployment, fleet)
    [good_version] = set(good.values())
    assert good_version != before["t0"]
    status = json.loads(rollout_cli(deployment, "-o", "json", "rollout", "status"))
    assert [(r["version"], r["state"]) for r in status["rollouts"]] == [(good_version, "completed")]

    # A bad version: the canary's run fails, the rollout halts, nobody else is started.
    known = len(deployment.executions(deployment.provision))
    upload_probe(deployment, "Bad_Probe", "2")
    runs = working_runs(deployment, known)
    assert sorted(runs) == ["t0"] and runs["t0"]["status"] == "FAILED"
    assert {json.loads(run["input"])["cluster_id"] for run in deployment.settle(known)} == {fleet[0].id}
    after_bad = config_versions(deployment, fleet)
    assert after_bad == good  # the canary's failed run kept its version too
    [bad] = [state for state in store.list() if state.state == HALTED]
    assert bad.halt is not None and bad.halt.cluster_id == fleet[0].id and "Bad_Probe" in bad.halt.problem
    status = json.loads(rollout_cli(deployment, "-o", "json", "rollout", "status"))
    [halted] = status["rollouts"]
    assert halted["state"] == "halted" and halted["waiting_for"].startswith(f"rollout halted: {fleet[0].id}: ")

    # A registry edit of a cluster that has not taken the version cannot jump the waves: its run is held at begin.
    known = len(deployment.executions(deployment.provision))
    stored = deployment.registry.get(fleet[5].id)  # as CLM left it (ready), one config item more
    deployment.registry.put(dataclasses.replace(stored, config_items={**stored.config_items, "team": "b"}))
    edit = deployment.only_run(known)
    plan = json.loads(edit["output"])["plan"]
    assert plan["action"] == "skip", plan
    assert plan["reason"].startswith(
        f"held by its rollout: waits for its wave in the rollout of configuration {bad.version}"
    )
    assert config_versions(deployment, fleet) == good

    # A newer good version supersedes it, from the canary; paused while the canary runs, it starts nothing more.
    known = len(deployment.executions(deployment.provision))
    upload_probe(deployment, "probe", "3")
    canary = _wait_for_running(deployment, known, fleet[0].id)
    rollout_cli(deployment, "rollout", "pause", "--reason", "watching the canary")
    # Paused mid-run: from Render on, the run has dozens of Lambda steps and transitions (seconds) to go, the pause is
    # one PutItem; under load both slow alike.
    assert deployment.sfn.describe_execution(executionArn=canary)["status"] == "RUNNING"
    runs = working_runs(deployment, known)
    assert sorted(runs) == ["t0"] and runs["t0"]["status"] == "SUCCEEDED"  # the run in flight finished
    paused = config_versions(deployment, fleet)
    newest = paused["t0"]
    assert newest not in (good_version, None) and {v for k, v in paused.items() if k != "t0"} == {good_version}
    status = json.loads(rollout_cli(deployment, "-o", "json", "rollout", "status"))
    [rolling] = status["rollouts"]
    assert (rolling["version"], rolling["state"]) == (newest, ROLLING) and status["paused"]["reason"]
    assert rolling["waiting_for"] == "rollout paused (clm rollout resume)"

    resumed = rollout_cli(deployment, "rollout", "resume")
    assert "pause lifted" in resumed and "reconcile started" in resumed
    runs = working_runs(deployment, known)
    assert all(run["status"] == "SUCCEEDED" for run in runs.values())
    assert_waves(runs)
    assert set(config_versions(deployment, fleet).values()) == {newest}

    # The events on CLM's bus, as a rule delivered them to a queue: each rollout's story, the halt naming its cause.
    events = received(deployment, queue)
    assert of_version(events, good_version) == THROUGH
    assert of_version(events, bad.version) == [
        ("Rollout Started", ""), ("Rollout Wave Started", "canary"), ("Rollout Halted", ""),
    ]  # fmt: skip
    [halt] = [e["detail"] for e in events if e["detail-type"] == "Rollout Halted"]
    assert halt["cluster_id"] == fleet[0].id and "Bad_Probe" in halt["problem"] and halt["execution"]
    assert of_version(events, newest) == THROUGH
    assert all(e["source"] == "clm.rollout" and e["detail"]["at"] for e in events)
    [canary] = [e["detail"] for e in events if e["detail-type"] == "Rollout Wave Started" and e["detail"]["version"]
                == good_version and e["detail"]["wave"] == "canary"]  # fmt: skip
    assert (canary["clusters"], canary["concurrency"]) == ([fleet[0].id], 1)

    # The clusters' update events: a start and an end for each run that worked, none for a skip (the held edit).
    updated = received(deployment, updates)
    assert cluster_events_by_run(updated) == ends_of_working_runs(deployment, since)
    [failed] = [e["detail"] for e in updated if e["detail-type"] == "Cluster Update Failed"]
    assert (failed["cluster_id"], failed["alias"], failed["environment"]) == (fleet[0].id, "t0", "test")
    assert (failed["account"], failed["region"], failed["action"]) == ("123456789012", "eu-central-1", "provision")
    assert "Bad_Probe" in failed["problem"]["title"] and failed["problem"]["type"].startswith(PROBLEM_TYPES)
    assert [config_version_of(failed[key]) for key in ("version_from", "version_to")] == [good_version, bad.version]
    reached = {e["detail"]["cluster_id"] for e in updated if e["detail-type"] == "Cluster Update Succeeded"
               and config_version_of(e["detail"]["version_to"]) == newest}  # fmt: skip
    assert reached == {cluster.id for cluster in fleet}
    assert all(e["source"] == "clm.cluster" for e in updated)
    assert not [e for e in updated if "kube_auth_secret" in json.dumps(e) or "clm/t" in json.dumps(e)]  # no item


def cluster_events_by_run(events: list[dict[str, Any]]) -> dict[str, set[str]]:
    """The detail types of the cluster events of each execution (a retried step may repeat one: docs/events.md)."""
    found: dict[str, set[str]] = {}
    for event in events:
        found.setdefault(event["detail"]["execution"], set()).add(event["detail-type"])
    return found


def ends_of_working_runs(deployment: Deployment, since: int) -> dict[str, set[str]]:
    """The cluster events each provision run after the first `since` should have published: none for a skip."""
    expected = {}
    for execution in deployment.executions(deployment.provision)[since:]:
        run = deployment.sfn.describe_execution(executionArn=execution["executionArn"])
        if (json.loads(run.get("output") or "{}").get("plan") or {}).get("action") == "skip":
            continue
        end = "Cluster Update Succeeded" if run["status"] == "SUCCEEDED" else "Cluster Update Failed"
        expected[run["executionArn"]] = {"Cluster Update Started", end}
    return expected


def _wait_for_running(deployment: Deployment, known: int, cluster_id: str, timeout: float = 120.0) -> str:
    """The ARN of the first run of `cluster_id` after the first `known` once it runs past its begin."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for execution in deployment.executions(deployment.provision)[known:]:
            arn = execution["executionArn"]
            if (
                execution["status"] != "RUNNING"
                or json.loads(deployment.sfn.describe_execution(executionArn=arn)["input"])["cluster_id"] != cluster_id
            ):
                continue
            if "Render" in deployment.states(arn):
                return arn
        time.sleep(0.05)
    pytest.fail(f"no run of {cluster_id} started within {timeout} s")
