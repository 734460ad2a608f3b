"""`clm sandbox up|status|down` as a user runs them: the background sandbox serves AWS and Kubernetes, its
node simulators turn a new auto scaling group into Ready Nodes, and `down` leaves no process behind."""

from __future__ import annotations

import json
import os
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sandbox_up_serves_aws_and_kubernetes_and_down_stops_everything(tmp_path: Path) -> None:
    env = {**os.environ, "CLM_SANDBOX_DIR": str(tmp_path)}
    started = clm("sandbox", "up", "--boot-delay", "0.5", env=env)
    assert started.returncode == 0, started.stderr
    assert "export AWS_ENDPOINT_URL=http://127.0.0.1:" in started.stdout
    try:
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
