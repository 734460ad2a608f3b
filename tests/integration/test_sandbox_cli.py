"""`clm sandbox up|status|down` as a user runs them: the background sandbox serves AWS and Kubernetes, its
node simulators turn a new auto scaling group into Ready Nodes, and `down` leaves no process behind; without
CLM (`--bare`) the CLI says how to deploy it; with it, the path the README shows: up, import, provision --follow,
status, down; with `--accounts 3`, a hub and two target accounts, each with its target stack and cluster."""

from __future__ import annotations

import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import boto3
import pytest
from kubernetes import client, config

from clm.registry.clusters_yaml import load_clusters
from clm_sandbox import accounts, runner
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
    """Whether the process runs (a zombie, waiting for its parent to reap it, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


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


def test_sandbox_down_stops_the_control_plane_of_a_sandbox_that_does_not_stop_within_the_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandbox process too slow to stop its components (here: stopped by SIGSTOP, so it never handles the SIGTERM)
    is killed after the grace, and so are its control plane's etcd and kube-apiserver, which run in sessions of
    their own: under load, a daemon stopping three control planes ran past the grace and left them serving."""
    env = {**os.environ, "CLM_SANDBOX_DIR": str(tmp_path)}
    started = clm("sandbox", "up", "--bare", env=env)
    assert started.returncode == 0, started.stderr
    state = runner.status(tmp_path)
    assert state is not None and len(state.process_groups) == 4, state  # etcd, apiserver, controller-manager, scheduler
    os.kill(state.pid, signal.SIGSTOP)
    monkeypatch.setattr(runner, "STOP_GRACE_SECONDS", 1.0)
    assert runner.down(tmp_path)
    assert not _alive(state.pid)
    deadline = time.monotonic() + 10  # the kernel tears the killed components down; init reaps them
    while (left := [pid for pid in state.process_groups if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"components still running after `down`: {left}"
    assert not _serves(state.kube_apiserver)


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


def _sandbox_key(region: str) -> boto3.Session:
    """A session of the sandbox's admin key (the hub's account)."""
    return boto3.Session(aws_access_key_id="sandbox", aws_secret_access_key="sandbox", region_name=region)


def _admin_session(endpoint: str, account: str, region: str) -> boto3.Session:
    """A session of the account's admin role, assumed with the sandbox's key."""
    sts = _sandbox_key(region).client("sts", endpoint_url=endpoint)
    credentials = accounts.admin_credentials(sts, account)
    return boto3.Session(
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=credentials["AWS_SESSION_TOKEN"],
        region_name=region,
    )


def _serves(apiserver: str) -> bool:
    """Whether a Kubernetes API server answers at the URL (any HTTP answer)."""
    try:
        urllib.request.urlopen(f"{apiserver}/healthz", timeout=5, context=ssl._create_unverified_context())
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


def test_sandbox_up_with_three_accounts_deploys_a_hub_and_a_target_stack_and_cluster_in_each_other_account(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "CLM_SANDBOX_DIR": str(tmp_path), "COLUMNS": "200"}
    for name in ("AWS_ENDPOINT_URL", "CLM_REGISTRY_TABLE", "CLM_STACK"):
        env.pop(name, None)
    started = clm("sandbox", "up", "--accounts", "3", "--boot-delay", "0.5", env=env)
    assert started.returncode == 0, started.stderr[-3000:]
    state = json.loads(clm("-o", "json", "sandbox", "status", env=env).stdout)[0]
    apiservers = [state["kube_apiserver"], *(t["kube_apiserver"] for t in state["targets"])]
    try:
        output, endpoint = started.stdout, state["moto_endpoint"]
        targets = [(t["account"], t["region"], t["cluster_id"]) for t in state["targets"]]
        assert targets == [
            ("222222222222", "eu-west-1", "aws:222222222222:eu-west-1:kube-2"),
            ("333333333333", "eu-central-1", "aws:333333333333:eu-central-1:kube-3"),
        ]
        for line in (
            "  targets:         ClmTarget in 222222222222/eu-west-1, 333333333333/eu-central-1, each deployed as its "
            "account's admin",
            "  clm provision aws:222222222222:eu-west-1:kube-2 --follow",
            f"  KUBECONFIG={state['targets'][0]['kubeconfig']} kubectl get nodes",
        ):
            assert line in output.splitlines(), line
        for account, region, _ in targets:  # each target stack in its own account and region, as its admin made it
            stacks = _admin_session(endpoint, account, region).client("cloudformation", endpoint_url=endpoint)
            described = {s["StackName"]: s for s in stacks.describe_stacks()["Stacks"]}
            assert described["CDKToolkit"]["StackStatus"] == "CREATE_COMPLETE"
            assert described["ClmTarget"]["StackStatus"] == "CREATE_COMPLETE"
            outputs = {o["OutputKey"]: o["OutputValue"] for o in described["ClmTarget"]["Outputs"]}
            assert outputs["Hub"] == "123456789012:eu-central-1"
        hub = _sandbox_key(state["region"])
        hub_stacks = hub.client("cloudformation", endpoint_url=endpoint).describe_stacks()["Stacks"]
        assert "ClmTarget" not in {s["StackName"] for s in hub_stacks}
        functions = hub.client("lambda", endpoint_url=endpoint).list_functions()["Functions"]
        allowed = {f.get("Environment", {}).get("Variables", {}).get("CLM_TARGET_ACCOUNTS") for f in functions}
        assert "222222222222,333333333333" in allowed  # the hub's clm:targetAccounts

        clusters = load_clusters((tmp_path / "clusters.yaml").read_text())
        ids = ["aws:123456789012:eu-central-1:kube-1", *(cluster for _, _, cluster in targets)]
        assert [c.id for c in clusters] == ids
        secrets = hub.client("secretsmanager", endpoint_url=endpoint)
        kubeconfigs = [state["kubeconfig"], *(t["kubeconfig"] for t in state["targets"])]
        for cluster, kubeconfig in zip(clusters, kubeconfigs, strict=True):  # each reaching its own control plane
            secret = secrets.describe_secret(SecretId=cluster.config_items["kube_auth_secret"])
            assert secret["Tags"] == [{"Key": "clm:cluster-id", "Value": cluster.id}]
            value = secrets.get_secret_value(SecretId=secret["Name"])["SecretString"]
            assert value == Path(kubeconfig).read_text()
        assert len(set(apiservers)) == 3 and all(map(_serves, apiservers))

        shell = {**env, **exported(output)}
        listed = json.loads(clm("-o", "json", "registry", "list", env=shell).stdout)
        assert sorted(row["id"] for row in listed) == sorted(ids)  # registered: their first runs started
        kube_2 = ids[1]
        plan_line = next(line.strip() for line in output.splitlines() if line.strip().startswith(f"clm plan {kube_2}"))
        planned = clm("-o", "json", *plan_line.split()[1:], env=shell)  # the printed command, as a newcomer runs it
        assert planned.returncode == 0, planned.stderr[-3000:]
        assert json.loads(planned.stdout)["cluster"] == kube_2
        checked = {row["account"]: row for row in json.loads(clm("-o", "json", "targets", env=shell).stdout)}
        assert [checked[account]["reachable"] for account in ("222222222222", "333333333333")] == [True, True], checked
    finally:
        stopped = clm("sandbox", "down", env=env)
    assert stopped.stdout.strip() == "sandbox stopped"
    assert not any(map(_serves, apiservers))  # every control plane stopped
