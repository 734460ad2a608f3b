"""`clm rollout status | pause | resume | abort` on a (moto) registry table and a configuration folder: status computes
what reconcile would decide and writes nothing; pause and resume write the pause; a halted rollout is resumed, an
ongoing one aborted, by a unique prefix of its version; a wrong or ambiguous prefix is one line, exit 1."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from clm.cli.main import cli
from clm.config.local import LocalSource
from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.registry.rollouts import RolloutStore
from clm.rollout.state import Halt, RolloutState

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KUBE1, KUBE2 = "aws:123456789012:eu-central-1:kube-1", "aws:123456789012:eu-central-1:kube-2"
T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def run(*args: str, ok: bool = True):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    if ok:
        assert result.exit_code == 0, (result.output, result.exception)
    return result


@pytest.fixture
def fleet(aws, tmp_path, monkeypatch) -> tuple[Path, str, RolloutStore]:
    """The example clusters at an older configuration, a copy of the example configuration (its version), the store."""
    monkeypatch.delenv("CLM_CONFIG_SOURCE", raising=False)
    shutil.copytree(EXAMPLES / "config", tmp_path / "config")
    client = aws.client("dynamodb")
    create_table(client, "clm-registry")
    registry = DynamoRegistry(client, "clm-registry")
    for cluster in load_clusters((EXAMPLES / "clusters.yaml").read_text()):
        registry.put(cluster)
        registry.record_success(cluster.id, "older-config#h")
    return tmp_path / "config", LocalSource(tmp_path / "config").version(), RolloutStore(client, "clm-registry")


def status(config: Path) -> dict:
    return json.loads(run("-o", "json", "rollout", "status", "--config", str(config)).stdout)


def test_status_shows_what_reconcile_would_start_and_writes_nothing(fleet) -> None:
    config, version, store = fleet
    shown = status(config)
    [rollout] = shown["rollouts"]
    assert (rollout["version"], rollout["state"], rollout["start"]) == (version, "rolling", [KUBE1])
    assert rollout["waiting_for"] == "wave canary: its runs" and shown["paused"] is None
    assert [(w["wave"], w["state"], [c["id"] for c in w["clusters"]]) for w in rollout["wave_progress"]] == [
        ("canary", "rolling", [KUBE1]),
        ("pre-production", "pending", []),
        ("production", "pending", [KUBE2]),
    ]
    assert store.list() == []
    table = run("rollout", "status", "--config", str(config)).stdout
    assert f"rollout of {version[:7]}: rolling, waiting for wave canary: its runs" in " ".join(table.split())


def test_pause_and_resume(fleet) -> None:
    config, _, store = fleet
    assert "rollouts paused by arn:aws:" in run("rollout", "pause", "--reason", "INC-42").stdout
    shown = status(config)
    assert shown["paused"]["reason"] == "INC-42"
    assert shown["rollouts"][0]["waiting_for"] == "rollout paused (clm rollout resume)"
    assert shown["rollouts"][0]["start"] == []
    resumed = run("rollout", "resume", "--stack", "NoSuchStack")
    assert "pause lifted" in resumed.stdout and "reconcile not started (stack NoSuchStack not found" in resumed.output
    assert store.pause_of() is None
    assert run("rollout", "resume").stdout.strip() == "rollouts are not paused"


def test_a_halted_rollout_is_resumed_and_an_ongoing_one_aborted_by_a_prefix_of_its_version(fleet) -> None:
    _, version, store = fleet
    store.start(RolloutState(version, T0))
    store.start(RolloutState("zz-other", T0))
    store.halt(version, Halt(KUBE1, "arn:run", "step Apply: bad", T0))
    assert f"rollout of {version} resumed" in run("rollout", "resume", version[:6], "--stack", "NoSuchStack").stdout
    assert store.get(version).state == "rolling"
    again = run("rollout", "resume", version[:6], ok=False)
    assert again.exit_code == 1
    assert f"rollout of {version} is rolling: only a halted rollout is resumed" in str(again.exception)
    assert f"rollout of {version} aborted" in run("rollout", "abort", version).stdout
    ended = run("rollout", "abort", version, ok=False)
    assert ended.exit_code == 1 and "is aborted: only a rolling or halted rollout is aborted" in str(ended.exception)
    unknown = run("rollout", "abort", "nope", ok=False)
    assert unknown.exit_code == 1 and "no rollout of a version starting with 'nope' (kept: " in str(unknown.exception)
    assert run("rollout", "abort", "", ok=False).exit_code == 1  # every version starts with "": 2 rollouts match
