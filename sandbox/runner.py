"""Start, find and stop the background sandbox process (clm_sandbox.daemon) for `clm sandbox up|down|status`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clm_sandbox.controlplane import cache_root
from clm_sandbox.daemon import LOG_FILE, STATE_FILE
from clm_sandbox.targets import TargetPlane

STOP_GRACE_SECONDS = 30.0
KILL_GRACE_SECONDS = 10.0  # for the kernel to tear a killed process down and its parent to reap it


class SandboxError(RuntimeError):
    """The sandbox could not be started or stopped."""


@dataclass(frozen=True)
class SandboxState:
    """A running sandbox: its process and endpoints, and its target accounts (TargetPlane's fields)."""

    pid: int
    moto_endpoint: str
    kube_apiserver: str
    kubeconfig: str
    region: str
    log: str
    targets: list[dict[str, str]] = field(default_factory=list)
    process_groups: list[int] = field(default_factory=list)  # the control planes' components, each a group leader

    @property
    def planes(self) -> list[TargetPlane]:
        """The target accounts, with their clusters' control planes."""
        return [TargetPlane(**target) for target in self.targets]

    def environment(self) -> dict[str, str]:
        """The variables that point boto3, the clm CLI and kubectl at this sandbox."""
        return {
            "AWS_ENDPOINT_URL": self.moto_endpoint,
            "AWS_ACCESS_KEY_ID": "sandbox",
            "AWS_SECRET_ACCESS_KEY": "sandbox",
            "AWS_DEFAULT_REGION": self.region,
            "KUBECONFIG": self.kubeconfig,
        }


def default_state_dir() -> Path:
    """`$CLM_SANDBOX_DIR`, else `$CLM_CACHE/sandbox` (default ~/.cache/clm/sandbox)."""
    return Path(os.environ.get("CLM_SANDBOX_DIR") or cache_root() / "sandbox")


def status(state_dir: Path | None = None) -> SandboxState | None:
    """The running sandbox, or None (a state file left by a dead process is removed)."""
    path = (state_dir or default_state_dir()) / STATE_FILE
    try:
        state = SandboxState(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if not _alive(state.pid):
        path.unlink(missing_ok=True)
        return None
    return state


def up(
    state_dir: Path | None = None,
    *,
    options: dict[str, float | int] | None = None,
    timeout: float = 1800.0,
    progress: Callable[[str], None] = lambda _: None,
) -> SandboxState:
    """Start the sandbox in the background (or return the one already running) and wait until it is ready.

    The first start on a machine builds the control plane (several minutes); `progress` hears about it.
    """
    state_dir = state_dir or default_state_dir()
    running = status(state_dir)
    if running:
        return running
    state_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "clm_sandbox.daemon", "--state-dir", str(state_dir)]
    for name, value in (options or {}).items():
        command += [f"--{name.replace('_', '-')}", str(value)]
    with (state_dir / "daemon.out").open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline, announced = time.monotonic() + timeout, False
    while time.monotonic() < deadline:
        state = status(state_dir)
        if state:
            return state
        if process.poll() is not None:
            raise SandboxError(f"the sandbox process exited ({process.returncode}):\n{_tail(state_dir)}")
        if not announced and (state_dir / "control-plane-build.log").exists():
            progress("building the Kubernetes control plane from Debian sources (first run only, ~10 min)")
            announced = True
        time.sleep(0.2)
    _terminate(process.pid)
    raise SandboxError(f"the sandbox was not ready after {timeout:.0f} s:\n{_tail(state_dir)}")


def down(state_dir: Path | None = None) -> bool:
    """Stop the running sandbox; False when none was running."""
    state = status(state_dir)
    if state is None:
        return False
    _terminate(state.pid, state.process_groups)
    return True


def _terminate(pid: int, component_groups: Sequence[int] = ()) -> None:
    """SIGTERM the sandbox (it stops its components), SIGKILL its components' process groups and its own if it
    lingers; returns once the process is gone (a killed process lingers until the kernel has torn it down and its
    parent has reaped it)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if _gone_within(pid, STOP_GRACE_SECONDS):
        return
    for group in (*component_groups, pid):  # the components first: the living sandbox keeps their PIDs unreused
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    if not _gone_within(pid, KILL_GRACE_SECONDS):
        raise SandboxError(f"the sandbox (pid {pid}) is still running after SIGKILL")


def _gone_within(pid: int, seconds: float) -> bool:
    """Whether the process is gone within `seconds`."""
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        finished, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return finished == 0


def _tail(state_dir: Path, lines: int = 20) -> str:
    texts = []
    for name in ("daemon.out", LOG_FILE):
        path = state_dir / name
        if path.exists():
            texts.append("\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
    return "\n".join(texts)
