"""The peer of bench/peer_roll.py: eks-rolling-update (hellofresh's, from PyPI) in a virtualenv of its own, the
kubectl it shells out to, the IAM role it runs as in the sandbox, its settings, and the reading of its log.

eks-rolling-update 1.1.8 (its wheel's sha256 pinned) goes into ${CLM_CACHE:-~/.cache/clm}/peer/, made on first use,
with its dependencies at the versions CLM's layer lock pins (boto3, kubernetes: it takes any newer than 1.9/10.0)
and python-dotenv. It drains with `kubectl drain --ignore-daemonsets --delete-local-data`, a flag kubectl 1.24
and later refuse: it gets kubectl v1.20.2, the sandbox's apiserver's version, from Debian bookworm's
kubernetes-client package (the source package the sandbox's control plane is built from; the .deb's sha256
pinned), unpacked beside it in the cache. Its waits are whole seconds: each is set as low as it works (see
SETTINGS).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("CLM_CACHE") or Path.home() / ".cache" / "clm") / "peer"
TOOL = "eks-rolling-update==1.1.8"
TOOL_SHA256 = "daa54f8688d7cc5c22c99cbb4e6a1c9159f957fcf0608668d41396c0ed7f9b66"  # its py2.py3 wheel
TOOL_COMMAND = "eks_rolling_update.py"  # its console script
# Its imports, at CLM's pins where CLM pins them (requirements-layer.lock); setuptools for distutils on 3.12+.
TOOL_DEPENDENCIES = ("boto3", "kubernetes", "python-dotenv==1.2.4", "setuptools==84.2.1")
KUBECTL_PACKAGE = "kubernetes-client=1.20.5+really1.20.2-1.1+deb12u1"
KUBECTL_SHA256 = "087c42dc26c847740043cdaa8b16db666be5591a1da957f822922aa1b677494e"
KUBECTL_VERSION = "v1.20.2"
# Its settings (README: environment variables), each wait as low as the tool then still works:
SETTINGS = {
    "CLUSTER_HEALTH_WAIT": "0",  # the sleep after scaling up before the first health check (default 90 s)
    "CLUSTER_HEALTH_RETRY": "1",  # the health checks retry within themselves (below)
    # Between the polls of its node count, Ready and instance checks (default 20 s). Whole seconds: at 0 its
    # GLOBAL_MAX_RETRY polls go by at once and the check fails before the surge's nodes are Ready.
    "GLOBAL_HEALTH_WAIT": "1",
    "GLOBAL_MAX_RETRY": "120",  # polls before a check gives up (default 12): room, no extra time
    "BETWEEN_NODES_WAIT": "0",  # after each node (its default)
    "RUN_MODE": "1",  # its default: scale up, cordon the group's outdated nodes, drain them one after the other
}
# The permissions its README lists (IAM Requirements; its ec2:DescribeInstance is DescribeInstances).
PERMISSIONS = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
    "autoscaling:SuspendProcesses",
    "autoscaling:ResumeProcesses",
    "autoscaling:UpdateAutoScalingGroup",
    "autoscaling:CreateOrUpdateTags",
    "autoscaling:DeleteTags",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribeInstances",
)
ROLE = "eks-rolling-update"
_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \w+\s+(.*)$")
SCALE_UP = re.compile(r"^Setting asg desired capacity from (\d+) to (\d+)")
DONE = "*** Rolling update of all asg is complete! ***"


class PeerError(RuntimeError):
    """The peer could not be installed or did not finish its roll."""


def lock_pins(lock_text: str) -> list[str]:
    """`name==version` of each package of a pip lock file (`name==version \\` lines, their hashes left out)."""
    return [match.group(1) for match in re.finditer(r"^([A-Za-z0-9_.-]+==[^\s\\]+)", lock_text, re.MULTILINE)]


def ensure_tool(cache: Path = CACHE) -> Path:
    """The bin directory of eks-rolling-update's virtualenv, made (once) under `cache`."""
    venv = cache / TOOL.replace("==", "-")
    done = venv / ".installed"
    if done.exists():
        return venv / "bin"
    shutil.rmtree(venv, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    with tempfile.TemporaryDirectory() as tmp:
        hashed, pins = Path(tmp, "tool.txt"), Path(tmp, "pins.txt")
        hashed.write_text(f"{TOOL} --hash=sha256:{TOOL_SHA256}\n")
        pins.write_text("\n".join(lock_pins((ROOT / "requirements-layer.lock").read_text())) + "\n")
        _run([*pip, "--require-hashes", "--no-deps", "-r", str(hashed)])
        _run([*pip, "-c", str(pins), *TOOL_DEPENDENCIES])
    done.touch()
    return venv / "bin"


def ensure_kubectl(cache: Path = CACHE) -> Path:
    """A directory holding kubectl v1.20.2 (Debian bookworm's kubernetes-client, unpacked once under `cache`)."""
    home = cache / f"kubectl-{KUBECTL_VERSION}"
    if (home / "kubectl").exists():
        return home
    with tempfile.TemporaryDirectory() as tmp:
        download = ["apt-get", "-o", "APT::Sandbox::User=root", "download", KUBECTL_PACKAGE]
        if subprocess.run(download, check=False, cwd=tmp, capture_output=True).returncode:
            _run(["apt-get", "update", "-qq"])  # a machine whose package lists are not there yet
            _run(download, cwd=tmp)
        [deb] = Path(tmp).glob("*.deb")
        digest = hashlib.sha256(deb.read_bytes()).hexdigest()
        if digest != KUBECTL_SHA256:
            raise PeerError(f"{deb.name}: sha256 {digest}, expected {KUBECTL_SHA256}")
        _run(["dpkg-deb", "-x", str(deb), str(Path(tmp, "root"))])
        home.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(tmp, "root", "usr", "bin", "kubectl"), home / "kubectl.partial")
        (home / "kubectl.partial").rename(home / "kubectl")
    return home


def _run(command: list[str], cwd: str | None = None) -> None:
    result = subprocess.run(command, check=False, cwd=cwd, capture_output=True, text=True)
    if result.returncode:
        raise PeerError(f"{' '.join(command)}: exit {result.returncode}: {(result.stderr or result.stdout)[-2000:]}")


def role_credentials(iam: Any, sts: Any) -> dict[str, str]:
    """Credentials of a session of a role allowed what eks-rolling-update's README lists (made once): the
    sandbox's IAM judge judges every call signed with them."""
    account = sts.get_caller_identity()["Account"]
    trust = {
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account}:root"}, "Action": "sts:AssumeRole"}
        ]
    }
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": list(PERMISSIONS), "Resource": "*"}]}
    try:
        arn = iam.get_role(RoleName=ROLE)["Role"]["Arn"]
    except iam.exceptions.NoSuchEntityException:
        arn = iam.create_role(RoleName=ROLE, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        iam.put_role_policy(RoleName=ROLE, PolicyName=ROLE, PolicyDocument=json.dumps(policy))
    session = sts.assume_role(RoleArn=arn, RoleSessionName=ROLE)["Credentials"]
    return {
        "AWS_ACCESS_KEY_ID": session["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": session["SecretAccessKey"],
        "AWS_SESSION_TOKEN": session["SessionToken"],
    }


def tool_env(
    base: dict[str, str], bin_dir: Path, kubectl_dir: Path, endpoint: str, kubeconfig: Path, credentials: dict[str, str]
) -> dict[str, str]:
    """The tool's environment: `base` without AWS credentials or proxies, its kubectl first on PATH, AWS at the
    sandbox's `endpoint` with `credentials`, the sandbox's `kubeconfig`, and SETTINGS."""
    env = {k: v for k, v in base.items() if not k.startswith("AWS_") and "proxy" not in k.lower()}
    env.update(SETTINGS)
    env.update(credentials)
    env.update(
        PATH=os.pathsep.join([str(kubectl_dir), str(bin_dir), base.get("PATH", "")]),
        AWS_ENDPOINT_URL=endpoint,
        AWS_DEFAULT_REGION=base.get("AWS_DEFAULT_REGION", "eu-central-1"),
        KUBECONFIG=str(kubeconfig),
        PYTHONWARNINGS="ignore::DeprecationWarning",  # distutils, in its config module
    )
    return env


@dataclass(frozen=True)
class PeerLog:
    """What eks-rolling-update's log says: when it scaled the group up (epoch seconds) and to how many, when it
    said the roll was complete (None: it did not), and the nodes it drained in order."""

    scaled_up: float | None
    surge_to: int | None
    done: float | None
    drained: tuple[str, ...]


def read_log(text: str) -> PeerLog:
    """Read the tool's log lines (`2026-11-28 09:10:11,123 INFO     message`, local time)."""
    scaled_up = surge_to = done = None
    drained = []
    for line in text.splitlines():
        match = _LOG_LINE.match(line)
        if not match:
            continue
        at = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        message = match.group(2)
        scale = SCALE_UP.match(message)
        if scale and scaled_up is None and int(scale.group(2)) > int(scale.group(1)):
            scaled_up, surge_to = at, int(scale.group(2))
        elif message.startswith("Draining worker node with kubectl drain "):
            drained.append(message.split()[6])
        elif message == DONE:
            done = at
    return PeerLog(scaled_up, surge_to, done, tuple(drained))
