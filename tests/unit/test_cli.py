"""The clm CLI: registry and render commands on in-process moto, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from clm.cli.main import cli, describe_error
from clm.registry.dynamodb import create_table

EXAMPLES = Path(__file__).parents[2] / "examples"
TABLE = "clm-registry"


@pytest.fixture
def run(aws):
    create_table(aws.client("dynamodb"), TABLE)
    runner = CliRunner()

    def invoke(*args: str, ok: bool = True):
        result = runner.invoke(cli, ["--table", TABLE, *args], catch_exceptions=True)
        if ok:
            assert result.exit_code == 0, (result.output, result.exception)
        return result

    return invoke


def test_import_list_show_export_round_trip(run, tmp_path):
    imported = run("-o", "json", "registry", "import", str(EXAMPLES / "clusters.yaml"))
    assert [row["change"] for row in json.loads(imported.output)] == ["new", "new"]
    again = run("-o", "json", "registry", "import", str(EXAMPLES / "clusters.yaml"))
    assert [row["change"] for row in json.loads(again.output)] == ["unchanged", "unchanged"]
    listed = json.loads(run("-o", "json", "registry", "list").output)
    assert {row["id"] for row in listed} == {
        "aws:123456789012:eu-central-1:kube-1",
        "aws:123456789012:eu-central-1:kube-2",
    }
    shown = yaml.safe_load(run("registry", "show", "aws:123456789012:eu-central-1:kube-2").output)
    assert shown["node_pools"][0]["instance_type"] == "m5.xlarge"
    out = tmp_path / "export.yaml"
    run("registry", "export", "--no-status", str(out))
    assert yaml.safe_load(out.read_text()) == yaml.safe_load((EXAMPLES / "clusters.yaml").read_text())


def test_import_dry_run_writes_nothing(run):
    result = run("registry", "import", "--dry-run", str(EXAMPLES / "clusters.yaml"))
    assert "would write 2 of 2 clusters" in result.output
    assert json.loads(run("-o", "json", "registry", "list").output) == []


def test_invalid_file_writes_nothing(run, tmp_path):
    bad = tmp_path / "clusters.yaml"
    head, _, tail = (EXAMPLES / "clusters.yaml").read_text().rpartition("region: eu-central-1")  # kube-2's
    bad.write_text(head + "region: moon" + tail)
    result = run("registry", "import", str(bad), ok=False)
    assert result.exit_code != 0
    assert "cluster aws:123456789012:eu-central-1:kube-2: region" in str(result.exception)
    assert json.loads(run("-o", "json", "registry", "list").output) == []


def test_render_from_registry_and_from_file(run, tmp_path):
    run("registry", "import", str(EXAMPLES / "clusters.yaml"))
    result = run("-o", "json", "render", "all", "--config", str(EXAMPLES / "config"), "--out", str(tmp_path))
    rows = json.loads(result.output)
    assert [row["manifests"] for row in rows] == [7, 7]
    assert (tmp_path / "kube-1" / "manifests" / "02-example-app" / "002-deployment-web.yaml").exists()
    from_file = run(
        "-o",
        "json",
        "render",
        "aws:123456789012:eu-central-1:kube-1",
        "--config",
        str(EXAMPLES / "config"),
        "--registry-file",
        str(EXAMPLES / "clusters.yaml"),
    )
    assert json.loads(from_file.output)[0]["version"] == rows[0]["version"]


def test_render_unknown_cluster(run):
    result = run("render", "aws:1:nowhere", "--config", str(EXAMPLES / "config"), ok=False)
    assert describe_error(result.exception) == "cluster aws:1:nowhere is not in the registry"


def run_clm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "clm.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (
            ["registry", "show", "x"],
            {"AWS_ENDPOINT_URL": "http://127.0.0.1:9"},
            "error: cannot reach http://127.0.0.1:9",
        ),
        (["registry", "import", "/nonexistent.yaml"], {}, "does not exist"),
        (
            ["render", "x", "--config", str(EXAMPLES / "config"), "--registry-file", str(EXAMPLES / "clusters.yaml")],
            {},
            "error: cluster x is not in the registry",
        ),
    ],
)
def test_errors_are_one_line_without_traceback(args, env, expected):
    result = run_clm(*args, env=env)
    assert result.returncode != 0
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


def test_template_error_names_file_and_line(tmp_path):
    config = tmp_path / "config"
    subprocess.run(["cp", "-r", str(EXAMPLES / "config"), str(config)], check=True)
    (config / "cluster" / "manifests" / "example-app" / "03-config.yaml").write_text("a: {{ oops(\n")
    result = run_clm("render", "all", "--config", str(config), "--registry-file", str(EXAMPLES / "clusters.yaml"))
    assert result.returncode == 1
    assert "cluster/manifests/example-app/03-config.yaml:1: template syntax error" in result.stderr
    assert "Traceback" not in result.stderr


def no_credentials(tmp_path: Path) -> dict[str, str]:
    """An environment in which boto3 finds no AWS credentials (and would never reach AWS anyway)."""
    return {
        "AWS_ACCESS_KEY_ID": "",
        "AWS_SECRET_ACCESS_KEY": "",
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    }


def test_no_credentials_is_one_line(tmp_path):
    result = run_clm("registry", "list", env=no_credentials(tmp_path))
    assert result.returncode == 1
    assert "error: no AWS credentials" in result.stderr


def test_help_teaches():
    result = CliRunner().invoke(cli, ["--help"])
    assert "clm registry import examples/clusters.yaml" in result.output
    render_help = CliRunner().invoke(cli, ["render", "--help"]).output
    assert "s3://bucket/prefix" in render_help


def test_render_help_says_how_several_config_sources_combine():
    text = " ".join(CliRunner().invoke(cli, ["render", "--help"]).output.split())
    assert "later sources override earlier ones" not in text  # not so: only config-defaults.yaml's keys are
    for said in (
        "config-defaults.yaml of every source, merged key by key, a later source's value winning a key",
        "deletions.yaml of every source, its lists concatenated in source order",
        "the manifest components of every source, each applied as <source>/<component>",
        "everything else (cluster, node-pool and etcd stacks, node files, Karpenter objects) from the first source",
    ):
        assert said in text, said
