"""The sandbox's real Kubernetes v1.20.2 control plane: start, run workloads, stop cleanly.

The binaries are built once (several minutes) by ``ensure_built()`` when the cache is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from kubernetes import client, config

from clm_sandbox import controlplane
from clm_sandbox.controlplane import (
    BINARIES,
    BUILD_SCRIPT,
    CacheError,
    ControlPlane,
    ControlPlaneError,
    PortInUseError,
    ensure_built,
    verify_binaries,
)

# The first test may have to build the control plane: allow for that.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def binaries() -> dict[str, Path]:
    return ensure_built()


@pytest.fixture
def own_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make the control plane's temp dir inside a directory the test can watch."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def _gone(pid: int) -> bool:
    """True when neither the process nor anything of its process group is left."""
    for probe in (os.kill, os.killpg):
        try:
            probe(pid, 0)
        except ProcessLookupError:
            continue
        return False
    return True


def _assert_stopped(pids: dict[str, int], tmpdir: Path | None) -> None:
    assert pids, "no process was started"
    left = {name: pid for name, pid in pids.items() if not _gone(pid)}
    assert not left, f"processes left running: {left}"
    if tmpdir is not None:
        assert not tmpdir.exists()


def _wait_for(what: str, predicate: object, timeout: float = 60.0) -> object:
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()  # type: ignore[operator]
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def _deployment(name: str, replicas: int) -> client.V1Deployment:
    labels = {"app": name}
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="app", image="registry.invalid/app:1")]),
            ),
        ),
    )


def test_control_plane_runs_controllers_and_stops_cleanly(binaries: dict[str, Path]) -> None:
    cp = ControlPlane()
    with cp:
        tmpdir, pids = cp.tmpdir, cp.pids
        assert tmpdir is not None and tmpdir.is_dir()
        assert set(pids) == set(BINARIES)
        assert cp.server.startswith("https://127.0.0.1:")
        assert cp.token not in repr(cp)
        assert cp.kubeconfig_path.stat().st_mode & 0o077 == 0

        api_client = config.new_client_from_config(str(cp.kubeconfig_path))
        core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
        assert client.VersionApi(api_client).get_code().git_version == "v1.20.2"

        ns = "clm-it"
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
        apps.create_namespaced_deployment(ns, _deployment("web", 3))

        def pods() -> list[client.V1Pod]:
            items = core.list_namespaced_pod(ns, label_selector="app=web").items
            return items if len(items) == 3 else []

        created = _wait_for("3 pods from the ReplicaSet", pods)
        assert all(p.metadata.owner_references[0].kind == "ReplicaSet" for p in created)
        assert all(p.status.phase == "Pending" for p in created)  # no nodes: nothing schedules
        replica_sets = apps.list_namespaced_replica_set(ns).items
        assert len(replica_sets) == 1 and replica_sets[0].spec.replicas == 3
        # The service-account token controller gave the namespace's default account a token.
        assert core.read_namespaced_service_account("default", ns).secrets

        # v1.20 serves PodDisruptionBudget (and Eviction) only as policy/v1beta1.
        custom = client.CustomObjectsApi(api_client)
        kinds = {r.kind for r in custom.get_api_resources("policy", "v1beta1").resources}
        assert "PodDisruptionBudget" in kinds
        eviction = next(r for r in core.get_api_resources().resources if r.name == "pods/eviction")
        assert (eviction.group, eviction.version) == ("policy", "v1beta1")
        pdb = {
            "apiVersion": "policy/v1beta1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        }
        custom.create_namespaced_custom_object("policy", "v1beta1", ns, "poddisruptionbudgets", pdb)

        def pdb_status() -> dict[str, object]:
            obj = custom.get_namespaced_custom_object("policy", "v1beta1", ns, "poddisruptionbudgets", "web")
            status = obj.get("status", {})
            return status if status.get("expectedPods") == 3 else {}

        assert _wait_for("the disruption controller", pdb_status)["disruptionsAllowed"] == 0

        memory = cp.process_memory()
        assert set(memory) == set(BINARIES) and all(rss > 0 for rss in memory.values())
        report = ", ".join(f"{name} {rss / 2**20:.0f} MiB" for name, rss in memory.items())
        print(f"\ncontrol plane ready in {cp.startup_seconds:.1f} s; RSS: {report}")
        api_client.close()
    assert cp.tmpdir is None
    _assert_stopped(pids, tmpdir)
    cp.stop()  # idempotent


def test_stop_cleans_up_after_a_component_died(binaries: dict[str, Path]) -> None:
    with ControlPlane() as cp:
        tmpdir, pids = cp.tmpdir, cp.pids
        os.kill(pids["etcd"], signal.SIGKILL)
        os.kill(pids["kube-scheduler"], signal.SIGKILL)
    _assert_stopped(pids, tmpdir)
    assert cp.process_memory() == {}


def test_failed_start_cleans_up(binaries: dict[str, Path], own_tempdir: Path) -> None:
    cp = ControlPlane(startup_timeout=0.05)
    with pytest.raises(ControlPlaneError, match="not ready within"), cp:
        pass
    _assert_stopped(cp.pids, None)
    assert list(own_tempdir.iterdir()) == []


def test_requested_port_in_use_is_refused(binaries: dict[str, Path], own_tempdir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cp = ControlPlane(apiserver_port=port)
        with pytest.raises(PortInUseError, match=f"127.0.0.1:{port} for kube-apiserver"):
            cp.start()
    assert cp.pids == {}
    assert list(own_tempdir.iterdir()) == []


def test_port_taken_after_the_check_is_reported(
    binaries: dict[str, Path], own_tempdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Someone takes the port between the check and etcd's bind: etcd's log tells.
    monkeypatch.setattr(controlplane, "_check_port_free", lambda port, component: None)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cp = ControlPlane(etcd_port=port)
        with pytest.raises(PortInUseError, match="etcd could not listen: port already in use"):
            cp.start()
    _assert_stopped(cp.pids, None)
    assert list(own_tempdir.iterdir()) == []


def test_missing_cache_gives_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLM_CACHE", str(tmp_path))
    with pytest.raises(CacheError, match=r"not built: .*manifest\.sha256 is missing; run .*build-control-plane\.sh"):
        ControlPlane().start()
    result = subprocess.run(["bash", str(BUILD_SCRIPT), "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 1, result.stdout + result.stderr


def _copy_cache(binaries: dict[str, Path], dest: Path) -> Path:
    """A cache copy whose binaries are symlinks to the real ones (cheap) and a real manifest."""
    dest.mkdir(parents=True)
    for name, path in binaries.items():
        (dest / name).symlink_to(path)
    shutil.copy(path.parent / "manifest.sha256", dest / "manifest.sha256")
    return dest


def test_corrupt_cache_gives_a_clear_error(
    binaries: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _copy_cache(binaries, tmp_path / "control-plane" / controlplane.K8S_VERSION)
    monkeypatch.setenv("CLM_CACHE", str(tmp_path))
    assert verify_binaries() == {name: copy / name for name in BINARIES}
    check = ["bash", str(BUILD_SCRIPT), "--check"]
    assert subprocess.run(check, capture_output=True, check=False).returncode == 0

    manifest = copy / "manifest.sha256"
    lines = manifest.read_text().splitlines()
    lines[0] = ("0" if lines[0][0] != "0" else "1") + lines[0][1:]
    manifest.write_text("\n".join(lines) + "\n")
    with pytest.raises(CacheError, match=r"does not match the manifest; run .*build-control-plane\.sh"):
        ControlPlane().start()
    assert subprocess.run(check, capture_output=True, check=False).returncode == 1

    manifest.write_text("garbage\n")
    with pytest.raises(CacheError, match="corrupt manifest"):
        verify_binaries()
    assert subprocess.run(check, capture_output=True, check=False).returncode == 1


def test_build_script_returns_at_once_when_cached(binaries: dict[str, Path]) -> None:
    started = time.monotonic()
    result = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert "cache complete" in result.stdout
    assert elapsed < 5, f"cached build script took {elapsed:.1f} s"


def test_a_terminated_test_session_stops_the_shared_control_plane(tmp_path: Path) -> None:
    root = Path(__file__).parents[2]
    (tmp_path / "test_hang.py").write_text(
        "import json, time\n"
        "def test_hang(control_plane):\n"
        "    print('PIDS', control_plane.tmpdir, json.dumps(control_plane.pids), flush=True)\n"
        "    time.sleep(600)\n"
    )
    session = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-s",
            "-q",
            "-p",
            "tests.integration.conftest",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_hang.py"),
        ],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert session.stdout is not None
        line = next(line for line in session.stdout if line.startswith("PIDS "))
        _, tmpdir, pids = line.split(" ", 2)
        session.send_signal(signal.SIGTERM)
        assert session.wait(timeout=60) != 0
    finally:
        session.kill()
    started = json.loads(pids)
    try:
        _assert_stopped(started, Path(tmpdir.strip()))
    finally:  # nothing left behind for the next tests if it failed
        for pid in started.values():
            if not _gone(pid):
                os.killpg(pid, signal.SIGKILL)
