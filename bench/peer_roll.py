"""Peer benchmark: eks-rolling-update and CLM rolling the same pool on the same sandbox, side by side.

    .venv/bin/python bench/peer_roll.py [--nodes 10] [--boot-delay 5] [--grace 3] [--pod-ready 1] [--replicas 2N]

The roll benchmark's sandbox (bench/roll_sandbox: moto's server with CLM deployed, the real control plane, the node
simulator) and physics (nodes Ready `--boot-delay` s after launch, pods Ready `--pod-ready` s after binding,
`--replicas` web pods, 2 per node by default, with a `--grace` s grace period behind a PodDisruptionBudget
minAvailable replicas - 1). kube-1's pool of N nodes (max_size 2N) is rolled three times, one after the other:

1. CLM one node at a time (surge 0, max_unavailable 1): a new worker AMI uploaded to the config bucket;
2. CLM with eks-rolling-update's extra capacity (surge = N, max_unavailable 1): another AMI uploaded;
3. eks-rolling-update 1.1.8 (bench/peer_tool: its own virtualenv, kubectl v1.20.2, its waits as low as they
   go): a new launch template version with another AMI, the group set to it (what the pool's stack update does),
   then `eks_rolling_update.py -c <cluster>`. It doubles the group, waits for the new nodes, cordons every old
   one, and drains them one after the other with kubectl drain. It runs as a role allowed what its README lists,
   every call judged by the sandbox's IAM judge.

Per roll: wall (CLM: the upload to the provision run's end; eks-rolling-update: the launch template change to its
exit), roll (CLM: its first look at the pool to the plan that found it done; eks-rolling-update: its scale-up to
its "complete"), the lower bound of the roll (bench/roll_bound with the roll's surge: for surge = N, one boot and
every eviction through the budget in turn, then the last grace), ratios, PDB violations (bench/roll_watch), the most
instances the group held (bench/roll_peak) and the pods evicted. Time figures depend on the machine's load
(printed); counts do not. Exits 0 with the figures, 1 if the sandbox or a roll fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from peer_report import PeerRow, clm_row, comparison_table
from peer_tool import TOOL_COMMAND, PeerError, ensure_kubectl, ensure_tool, read_log, role_credentials, tool_env
from rich.console import Console
from roll import load, measure_roll
from roll_bound import Simulation, roll_bound
from roll_peak import GroupPeak
from roll_sandbox import NEW_AMI, RollSandbox, start
from roll_watch import ReadyWatch

from clm_sandbox.nodesim.aws import cluster_groups

console = Console(highlight=False, width=150)
SURGE_AMI, PEER_AMI = "ami-0e3c9a0b673306eae", "ami-0f4d0b1c784417ffb"  # the second and third roll's
PEER_TIMEOUT = 600.0  # seconds, and 30 more per node


def measured_clm(sandbox: RollSandbox, logs: Path, ami: str, name: str, tool: str) -> PeerRow:
    """Roll the pool with CLM (a new AMI uploaded) and make its row."""
    peak = GroupPeak(sandbox.client("autoscaling"), sandbox.cluster.id)
    peak.start()
    try:
        result = measure_roll(sandbox, logs, ami, name)
    finally:
        peak.stop()
    return clm_row(tool, result, peak.peak)


def new_launch_template_version(sandbox: RollSandbox, ami: str) -> None:
    """A new version of the pool's launch template with image `ami`, and the group set to it."""
    autoscaling, ec2 = sandbox.client("autoscaling"), sandbox.client("ec2")
    [group] = cluster_groups(autoscaling, sandbox.cluster.id)
    template = group["LaunchTemplate"]
    created = ec2.create_launch_template_version(
        LaunchTemplateId=template["LaunchTemplateId"],
        SourceVersion=str(template["Version"]),
        LaunchTemplateData={"ImageId": ami},
    )
    version = str(created["LaunchTemplateVersion"]["VersionNumber"])
    autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=group["AutoScalingGroupName"],
        LaunchTemplate={"LaunchTemplateId": template["LaunchTemplateId"], "Version": version},
    )


def measured_peer(sandbox: RollSandbox, logs: Path, env: dict[str, str], command: Path) -> PeerRow:
    """Make the pool outdated (a new launch template version), run eks-rolling-update on it, and make its row."""
    simulation = sandbox.simulation
    assert sandbox.simulator is not None
    old_nodes = sandbox.simulator.ready_nodes
    watch = ReadyWatch(sandbox.kube_api, simulation.replicas - 1)
    peak = GroupPeak(sandbox.client("autoscaling"), sandbox.cluster.id)
    log = logs / "eks-rolling-update.log"
    watch.start()
    peak.start()
    try:
        triggered = time.time()
        new_launch_template_version(sandbox, PEER_AMI)
        with log.open("w") as output:
            exit_code = subprocess.run(
                [str(command), "--cluster_name", sandbox.cluster.id],
                check=False,
                env=env,
                cwd=logs,  # no .env file of the caller's
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=PEER_TIMEOUT + 30 * simulation.nodes,
            ).returncode
        ended = time.time()
    finally:
        peak.stop()
        watch.stop()
    read = read_log(log.read_text())
    if exit_code or read.done is None or read.scaled_up is None:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise PeerError(f"eks-rolling-update exited {exit_code} (its log: {log}):\n{tail}")
    if sorted(read.drained) != sorted(old_nodes):
        raise PeerError(f"eks-rolling-update drained {read.drained}, the pool's nodes were {old_nodes}")
    sandbox.simulator.wait_for_ready_nodes(simulation.nodes)
    pods = watch.pods_left(list(read.drained))
    return PeerRow(
        "eks-rolling-update 1.1.8",
        ended - triggered,
        read.done - read.scaled_up,
        roll_bound(pods, simulation),
        watch.violations,
        watch.lowest,
        peak.peak,
        sum(pods),
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench/peer_roll.py", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10, help="nodes in the pool (default 10)")
    parser.add_argument("--boot-delay", type=float, default=5.0, help="seconds from launch to a Ready Node (5)")
    parser.add_argument("--grace", type=int, default=3, help="the web pods' termination grace period, s (3)")
    parser.add_argument("--pod-ready", type=float, default=1.0, help="seconds from binding to a Ready pod (1)")
    parser.add_argument("--replicas", type=int, default=None, help="web pods (default: 2 per node)")
    return parser


def simulations(args: argparse.Namespace) -> tuple[Simulation, Simulation, Simulation]:
    """The three rolls' settings: CLM one at a time, CLM with surge = N, eks-rolling-update (surge = N, and every
    old node cordoned at once: nothing else may be unavailable, max_unavailable 0)."""
    nodes = args.nodes
    one = Simulation(nodes, args.replicas or 2 * nodes, args.boot_delay, args.grace, args.pod_ready, 1, 0)
    return one, dataclasses.replace(one, surge=nodes), dataclasses.replace(one, surge=nodes, max_unavailable=0)


def _say(text: str) -> None:
    console.print(f"[dim]{text}[/]")


def main(argv: list[str] | None = None) -> None:
    """Run the three rolls and print them side by side; exit 1 if the sandbox or a roll fails."""
    args = _parser().parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: stop the sandbox's processes
    one, surged, peer = simulations(args)
    logs = Path(tempfile.mkdtemp(prefix="clm-peer-bench-"))
    started = time.monotonic()
    console.print(f"peer benchmark: {one.nodes} nodes, {one.replicas} web pods; logs in {logs}\nat the start: {load()}")
    rows: list[PeerRow] = []
    try:
        bin_dir, kubectl_dir = ensure_tool(), ensure_kubectl()
        _say(f"eks-rolling-update in {bin_dir.parent}, kubectl in {kubectl_dir}")
        with ExitStack() as stack:
            sandbox = start(stack, surged, logs, _say, "1", "0")  # max_size 2N; surge set for the second roll
            _say(f"setup done after {time.monotonic() - started:.0f} s; CLM one at a time ({load()})")
            sandbox.simulation = one
            rows.append(measured_clm(sandbox, logs, NEW_AMI, "one-at-a-time", "CLM, one node at a time"))
            sandbox.set_pool_items(surge=str(one.nodes))
            sandbox.simulation = surged
            _say(f"CLM with surge {one.nodes} ({load()})")
            rows.append(measured_clm(sandbox, logs, SURGE_AMI, "surge", f"CLM, surge {one.nodes} (= pool)"))
            sandbox.simulation = peer
            credentials = role_credentials(sandbox.client("iam"), sandbox.client("sts"))
            env = tool_env(
                dict(os.environ), bin_dir, kubectl_dir, sandbox.endpoint, sandbox.plane.kubeconfig_path, credentials
            )
            _say(f"eks-rolling-update ({load()})")
            rows.append(measured_peer(sandbox, logs, env, bin_dir / TOOL_COMMAND))
    except Exception as exc:
        console.print(f"[bold red]benchmark failed:[/] {type(exc).__name__}: {exc} (logs in {logs})")
        raise SystemExit(1) from exc
    console.print(comparison_table(rows, one.nodes, one.replicas))
    console.print(
        "wall: from the trigger (CLM: the new AMI's upload; eks-rolling-update: the new launch template version) to"
        " the end; roll: from the roll's first action (CLM: its first plan; eks-rolling-update: its scale-up) to its"
        " end; bound: bench/roll_bound for each roll's surge"
    )
    console.print(f"at the end: {load()}; {time.monotonic() - started:.0f} s in all")


if __name__ == "__main__":
    main()
