"""The sandbox as a fleet (`clm sandbox up --accounts N`): beside the hub's account, up to three target accounts of
the sandbox's organization, each in a region (eu-west-1 and eu-central-1 in turn) with one example cluster, its own
control plane and its own node simulators acting as that account's admin.

Which accounts, regions and clusters is pure (:func:`fleet_targets`, :func:`cluster_id`); :func:`start_target` runs
in the daemon, the process that holds moto's backends (clm_sandbox.accounts makes the admin role there).
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clm.targets import Target
from clm_sandbox import accounts

if TYPE_CHECKING:
    from clm_sandbox.controlplane import ControlPlane

MAX_ACCOUNTS = 4
TARGET_ACCOUNTS = ("222222222222", "333333333333", "444444444444")
TARGET_REGIONS = ("eu-west-1", "eu-central-1")


@dataclass(frozen=True)
class TargetPlane:
    """A target account of the running sandbox: where it is, its cluster, and that cluster's control plane."""

    account: str
    region: str
    cluster_id: str
    kube_apiserver: str
    kubeconfig: str

    @property
    def target(self) -> Target:
        """The account and region."""
        return Target(self.account, self.region)


def fleet_targets(count: int) -> list[Target]:
    """The target accounts and regions of a sandbox of `count` accounts (1 to MAX_ACCOUNTS, the hub's included):
    222222222222 in eu-west-1, 333333333333 in eu-central-1, 444444444444 in eu-west-1, in that order."""
    if not 1 <= count <= MAX_ACCOUNTS:
        raise ValueError(f"a sandbox has 1 to {MAX_ACCOUNTS} accounts, not {count}")
    return [Target(account, TARGET_REGIONS[i % 2]) for i, account in enumerate(TARGET_ACCOUNTS[: count - 1])]


def cluster_name(target: Target) -> str:
    """The local id of the target's example cluster: kube-2 in 222222222222, kube-3 in 333333333333, ..."""
    return f"kube-{target.account[-1]}"


def cluster_id(target: Target) -> str:
    """The id of the target's example cluster (`aws:<account>:<region>:<name>`)."""
    return f"aws:{target.account}:{target.region}:{cluster_name(target)}"


def start_target(
    stack: contextlib.ExitStack, target: Target, state_dir: Path, endpoint: str, **simulator_options: float
) -> tuple[TargetPlane, ControlPlane]:
    """Make the target's account a member of the sandbox's organization, start its cluster's control plane (logs
    and kubeconfig in `state_dir`) and node simulators acting as the account's admin in its region; `stack` stops
    them. Call it in the process serving moto at `endpoint`. Returns the target and its control plane."""
    from kubernetes import config

    from clm_sandbox.controlplane import ControlPlane
    from clm_sandbox.deploy.cli import credentials_for, sandbox_session
    from clm_sandbox.nodesim.fleet import SimulatorFleet

    accounts.add_account(target.account)
    name = cluster_name(target)
    plane = stack.enter_context(ControlPlane(log_dir=state_dir / f"control-plane-{name}"))
    kubeconfig = state_dir / f"kubeconfig-{name}"
    shutil.copyfile(plane.kubeconfig_path, kubeconfig)
    kubeconfig.chmod(0o600)
    session = sandbox_session(credentials_for(endpoint, target.account, target.region))
    api = config.new_client_from_config(str(kubeconfig))
    fleet = SimulatorFleet(api, session, endpoint_url=endpoint, **simulator_options)
    fleet.start()
    stack.callback(fleet.stop)
    return TargetPlane(target.account, target.region, cluster_id(target), plane.server, str(kubeconfig)), plane
