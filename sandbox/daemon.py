"""The sandbox as one long-running process: moto server, control plane and node simulators (with --accounts N,
also N-1 target accounts, each with a control plane and simulators of its own: clm_sandbox.targets).

Started in the background by `clm sandbox up` (clm_sandbox.runner); writes its endpoints to a state file
when ready and stops everything on SIGTERM or SIGINT.

    python -m clm_sandbox.daemon --state-dir ~/.cache/clm/sandbox
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import threading
from pathlib import Path

import boto3

from clm_sandbox.controlplane import ControlPlane, ensure_built
from clm_sandbox.moto_server import SANDBOX_ENV, moto_server
from clm_sandbox.nodesim.fleet import SimulatorFleet
from clm_sandbox.targets import MAX_ACCOUNTS, fleet_targets, start_target

STATE_FILE = "sandbox.json"
LOG_FILE = "sandbox.log"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m clm_sandbox.daemon", description=__doc__)
    parser.add_argument("--state-dir", type=Path, required=True, help="where the state file and logs go")
    parser.add_argument("--port", type=int, default=None, help="moto's port (default: a free one)")
    parser.add_argument("--boot-delay", type=float, default=2.0, help="seconds from instance launch to Ready Node")
    parser.add_argument("--pod-ready-delay", type=float, default=0.5, help="seconds from pod bound to Ready")
    parser.add_argument("--time-scale", type=float, default=1.0, help="factor on pods' termination grace periods")
    parser.add_argument(
        "--accounts",
        type=int,
        default=1,
        choices=range(1, MAX_ACCOUNTS + 1),
        help="accounts: the hub's and N-1 targets, each with a control plane",
    )
    return parser


def run(args: argparse.Namespace) -> None:
    """Start everything, publish the state file, wait for a stop signal, stop everything."""
    state_dir: Path = args.state_dir
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    os.environ.update(SANDBOX_ENV)
    ensure_built(state_dir / "control-plane-build.log")
    options = {"boot_delay": args.boot_delay, "pod_ready_delay": args.pod_ready_delay, "time_scale": args.time_scale}
    with (
        moto_server(args.port) as endpoint,
        ControlPlane(log_dir=state_dir / "control-plane") as cp,
        contextlib.ExitStack() as targets,
    ):
        from kubernetes import config

        kubeconfig = state_dir / "kubeconfig"
        shutil.copyfile(cp.kubeconfig_path, kubeconfig)
        kubeconfig.chmod(0o600)
        session = boto3.Session(region_name=SANDBOX_ENV["AWS_DEFAULT_REGION"])
        fleet = SimulatorFleet(
            config.new_client_from_config(str(kubeconfig)), session, endpoint_url=endpoint, **options
        )
        fleet.start()
        try:
            started = [start_target(targets, t, state_dir, endpoint, **options) for t in fleet_targets(args.accounts)]
            planes = [plane for plane, _ in started]
            state = {
                "pid": os.getpid(),
                "moto_endpoint": endpoint,
                "kube_apiserver": cp.server,
                "kubeconfig": str(kubeconfig),
                "region": SANDBOX_ENV["AWS_DEFAULT_REGION"],
                "log": str(state_dir / LOG_FILE),
                "targets": [dataclasses.asdict(plane) for plane in planes],
                "process_groups": [pid for plane in (cp, *(c for _, c in started)) for pid in plane.pids.values()],
            }
            partial = state_dir / (STATE_FILE + ".tmp")
            partial.write_text(json.dumps(state, indent=2) + "\n")
            partial.replace(state_dir / STATE_FILE)
            logging.info("sandbox ready: %s", state)
            stop.wait()
        finally:
            (state_dir / STATE_FILE).unlink(missing_ok=True)
            fleet.stop()
    logging.info("sandbox stopped")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the daemon process."""
    args = _parser().parse_args(argv)
    args.state_dir.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=args.state_dir / LOG_FILE, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    run(args)


if __name__ == "__main__":
    main()
