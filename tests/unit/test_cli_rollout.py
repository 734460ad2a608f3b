"""`clm rollout plan`: the waves of the built-in policy or of cluster/rollout.yaml over a registry file or the
registry table, as a table or JSON; an invalid policy is one line naming file and line, exit 1."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from clm.cli.main import cli, main
from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REGISTRY_FILE = str(EXAMPLES / "clusters.yaml")
KUBE1, KUBE2 = "aws:123456789012:eu-central-1:kube-1", "aws:123456789012:eu-central-1:kube-2"


def rollout(*args: str, ok: bool = True):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    if ok:
        assert result.exit_code == 0, (result.output, result.exception)
    return result


def plan_json(*args: str) -> dict:
    return json.loads(rollout("-o", "json", "rollout", "plan", "--registry-file", REGISTRY_FILE, *args).stdout)


@pytest.fixture
def config(tmp_path, monkeypatch) -> Path:
    """A copy of the example configuration (CLM_CONFIG_SOURCE unset: the tests pass --config or not at all)."""
    monkeypatch.delenv("CLM_CONFIG_SOURCE", raising=False)
    shutil.copytree(EXAMPLES / "config", tmp_path / "config")
    return tmp_path / "config"


def test_without_a_policy_file_the_built_in_policy_orders_the_example_clusters(config):
    for args, source in (((), "built-in default"), (("--config", str(config)), f"no cluster/rollout.yaml in {config}")):
        planned = plan_json(*args)
        assert source in planned["policy"] and planned["max_concurrency"] == 3
        assert [(w["wave"], [c["id"] for c in w["clusters"]]) for w in planned["waves"]] == [
            ("canary", [KUBE1]),
            ("pre-production", []),
            ("production", [KUBE2]),
        ]
    canary = planned["waves"][0]
    assert (canary["concurrency"], canary["concurrency_given"], canary["bake"], canary["bake_seconds"]) == (
        1, "1", "30m", 1800,
    )  # fmt: skip
    assert canary["clusters"][0] == {
        "id": KUBE1, "account": "123456789012", "region": "eu-central-1", "environment": "test", "criticality": 1,
        "channel": "",
    }  # fmt: skip


def test_the_policy_of_the_configuration_is_read_and_named(config):
    (config / "cluster" / "rollout.yaml").write_text(
        "waves:\n  - name: prod-first\n    select: {environment: production}\n    bake: 2h\n"
    )
    planned = plan_json("--config", str(config))
    assert planned["policy"] == f"{config}/cluster/rollout.yaml"
    assert [(w["wave"], [c["id"] for c in w["clusters"]], w["bake"]) for w in planned["waves"]] == [
        ("prod-first", [KUBE2], "2h"),
        ("unmatched", [KUBE1], "0s"),
    ]


def test_the_table_shows_each_wave_with_its_clusters_and_warns_of_an_empty_wave(config):
    result = rollout("--output", "wide", "rollout", "plan", "--registry-file", REGISTRY_FILE)
    lines = result.stdout.splitlines()
    assert lines[0] == "policy: built-in default; 2 clusters in 3 waves, at most 3 at once"
    # One account and region: no columns for them (as `clm status`).
    assert lines[1].split() == ["wave", "concurrency", "bake", "cluster", "environment", "criticality"]
    assert lines[2].split() == ["canary", "1", "30m", KUBE1, "test", "1"]
    assert lines[3].split() == ["pre-production", "1", "1h", "-"]
    assert lines[4].split() == ["production", "1", "0s", KUBE2, "production", "2"]
    assert "warning: wave pre-production takes no cluster" in result.stderr


def test_clusters_in_several_regions_show_the_region_and_fit_80_columns(tmp_path):
    head, _, tail = Path(REGISTRY_FILE).read_text().rpartition("region: eu-central-1")  # kube-2's
    registry = tmp_path / "clusters.yaml"
    registry.write_text((head + "region: eu-west-1" + tail).replace("eu-central-1:kube-2", "eu-west-1:kube-2"))
    lines = rollout("rollout", "plan", "--registry-file", str(registry)).stdout.splitlines()
    assert lines[1].split() == ["wave", "at", "once", "bake", "cluster", "region", "env", "crit"]
    assert lines[4].split() == ["production", "1", "0s", "kube-2", "eu-west-1", "production", "2"]
    assert max(len(line) for line in lines) <= 80


def test_clusters_from_the_registry_table_decommissioned_ones_left_out(aws, config):
    create_table(aws.client("dynamodb"), "clm-registry")
    registry = DynamoRegistry(aws.client("dynamodb"), "clm-registry")
    kube1, kube2 = load_clusters(Path(REGISTRY_FILE).read_text())
    registry.put(kube1)
    registry.put(replace(kube2, lifecycle_status="decommissioned"))
    planned = json.loads(rollout("-o", "json", "rollout", "plan").stdout)
    assert [c["id"] for w in planned["waves"] for c in w["clusters"]] == [KUBE1]


def test_an_invalid_policy_is_one_line_naming_file_and_line_and_exit_1(config, monkeypatch, capsys):
    (config / "cluster" / "rollout.yaml").write_text("waves:\n  - name: a\n    concurrency: 0%\n")
    monkeypatch.setattr(
        sys, "argv", ["clm", "rollout", "plan", "--config", str(config), "--registry-file", REGISTRY_FILE]
    )
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        f"error: {config}/cluster/rollout.yaml:3: wave a: concurrency '0%' is not a percentage 1-100%"
    )


def test_help_teaches_the_format_with_the_built_in_policy_as_a_sample():
    text = rollout("rollout", "plan", "--help").stdout
    for words in ("cluster/rollout.yaml", "- name: canary", "max_concurrency: 3", "unmatched", "168h", "size"):
        assert words in text
    assert "rollout plan" in rollout("--help").stdout


def test_the_policy_freezes_are_shown(config):
    (config / "cluster" / "rollout.yaml").write_text(
        "waves:\n  - name: all\n"
        "freeze:\n  - {from: 2026-12-18T17:00:00+01:00, to: 2027-01-04T08:00:00+01:00, reason: year end}\n"
    )
    planned = plan_json("--config", str(config))
    assert planned["freezes"] == [{"from": "2026-12-18T16:00:00Z", "to": "2027-01-04T07:00:00Z", "reason": "year end"}]
    shown = rollout("rollout", "plan", "--config", str(config), "--registry-file", REGISTRY_FILE).stdout
    assert "frozen 2026-12-18T16:00:00Z to 2027-01-04T07:00:00Z (year end)" in " ".join(shown.split())
    assert plan_json()["freezes"] == []
