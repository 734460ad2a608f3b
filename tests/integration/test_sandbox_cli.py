"""`clm sandbox up|status|down` as a user runs them: the background sandbox serves AWS and Kubernetes, its
node simulators turn a new auto scaling group into Ready Nodes, and `down` leaves no process behind; without
CLM (`--bare`) the CLI says how to deploy it; with it, the path the README shows: up, import, provision --follow,
status, down."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest
from kubernetes import client, config

from clm_sandbox.nodesim import create_node_pool

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]


def clm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clm.cli", *args], check=False, env=env, capture_output=True, text=True, timeout=1800
    )


def exported(output: str) -> dict[str, str]:
    """The `export KEY=VALUE` lines `clm sandbox up` prints."""
    return dict(re.findall(r"^  export (\w+)=(.*)$", output, re.MULTILINE))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sandbox_up_serves_aws_and_kubernetes_and_down_stops_everything(tmp_path: Path) -> None:
    env = {**os.environ, "CLM_SANDBOX_DIR": str(tmp_path)}
    started = clm("sandbox", "up", "--bare", "--boot-delay", "0.5", env=env)
    assert started.returncode == 0, started.stderr
    assert "export AWS_ENDPOINT_URL=http://127.0.0.1:" in started.stdout
    assert "CLM deployed" not in started.stdout
    try:
        shell = {**env, **exported(started.stdout)}
        listed = clm("registry", "list", env=shell)
        assert listed.returncode == 1
        assert listed.stderr.splitlines() == [
            f"error: registry table clm-registry not found (endpoint {shell['AWS_ENDPOINT_URL']}, region "
            "eu-central-1): deploy CLM there: `clm sandbox deploy` in the sandbox, docs/deploy.md on AWS; or pass "
            "--table (or set CLM_REGISTRY_TABLE)"
        ]
        state = json.loads(clm("-o", "json", "sandbox", "status", env=env).stdout)[0]
        session = boto3.Session(
            aws_access_key_id="sandbox", aws_secret_access_key="sandbox", region_name=state["region"]
        )
        create_node_pool(
            session, "aws:123456789012:eu-central-1:sandbox-cli", "workers", 2, endpoint_url=state["moto_endpoint"]
        )
        core = client.CoreV1Api(config.new_client_from_config(state["kubeconfig"]))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready = [
                n
                for n in core.list_node().items
                if n.metadata.labels.get("node.kubernetes.io/node-pool") == "workers"
                and any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
            ]
            if len(ready) == 2:
                break
            time.sleep(0.5)
        assert len(ready) == 2
    finally:
        stopped = clm("sandbox", "down", env=env)
    assert stopped.stdout.strip() == "sandbox stopped"
    assert not _alive(state["pid"])
    status = clm("sandbox", "status", env=env)
    assert (status.returncode, status.stdout.strip()) == (3, "sandbox not running (start it with `clm sandbox up`)")
    assert clm("sandbox", "down", env=env).stdout.strip() == "sandbox not running"


def settled_status(env: dict[str, str], timeout: float = 120.0) -> dict:
    """`clm -o json status` once no run of the cluster is running: the first provision sets the lifecycle to
    ready, which is part of CLM's spec hash, so a second run (which changes nothing) follows at once."""
    deadline = time.monotonic() + timeout
    while True:
        [row] = json.loads(clm("-o", "json", "status", env=env).stdout)
        if row["running_execution"] is None or time.monotonic() > deadline:
            return row
        time.sleep(1)


def test_from_sandbox_up_to_a_provisioned_cluster_with_the_cli_alone(tmp_path: Path) -> None:
    env = {**os.environ, "CLM_SANDBOX_DIR": str(tmp_path), "COLUMNS": "80"}
    for name in ("AWS_ENDPOINT_URL", "CLM_REGISTRY_TABLE", "CLM_STACK"):
        env.pop(name, None)
    started = clm("sandbox", "up", "--boot-delay", "0.5", env=env)
    assert started.returncode == 0, started.stderr[-3000:]
    try:
        output = started.stdout
        clusters_file = tmp_path / "clusters.yaml"
        cluster = "aws:123456789012:eu-central-1:kube-1"
        assert "CLM deployed: stack Clm, registry table clm-registry" in output
        for command in (
            f"clm registry import {clusters_file}",
            f"clm provision {cluster} --follow",
            f"clm plan {cluster} --config s3://",
            "clm status",
            "clm sandbox down",
        ):
            assert f"  {command}" in output, command
        shell = {**env, **exported(output)}
        imported = clm("registry", "import", str(clusters_file), env=shell)
        assert imported.returncode == 0, imported.stderr
        assert "wrote 1 of 1 clusters" in imported.stdout
        followed = clm("provision", cluster, "--follow", env=shell)
        assert followed.returncode == 0, followed.stdout[-3000:] + followed.stderr[-3000:]
        last = followed.stdout.strip().splitlines()[-1]
        assert last.startswith("SUCCEEDED  execution "), followed.stdout[-3000:]
        assert "Succeed: cluster at version" in followed.stdout
        row = settled_status(shell)
        assert (row["lifecycle"], row["next_version"], row["running_execution"]) == ("ready", None, None)
        config_version, spec_hash = row["current_version"].split("#")
        table = clm("status", env=shell)
        assert table.returncode == 0 and table.stderr == ""
        assert max(len(line) for line in table.stdout.splitlines()) <= 80
        [line] = [line for line in table.stdout.splitlines() if line.startswith("kube-1 ")]
        assert line.split()[:3] == ["kube-1", "ready", f"{config_version[:7]}#{spec_hash[:7]}"]
    finally:
        stopped = clm("sandbox", "down", env=env)
    assert stopped.stdout.strip() == "sandbox stopped"
