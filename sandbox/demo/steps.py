"""`make demo`: CLM's main job end to end on the local sandbox, from nothing to a rolled cluster.

1. starts the sandbox: moto's server (AWS), a real Kubernetes control plane and the node simulator;
2. deploys the CDK app into it (as `cdk deploy` would) and uploads examples/config to the config bucket
   (clm_sandbox.deploy.examples, as `clm sandbox up` does);
3. imports kube-1 of examples/clusters.yaml with the real `clm` CLI: the registry change starts the
   provision workflow (stacks, manifests), followed live; waits for the example workload's rollout;
4. changes the config (a new worker AMI): the upload starts reconcile, which starts provision, which rolls
   every node one at a time, followed live while a watcher counts the workload's Ready pods; `clm status`;
5. ends with a summary (nodes replaced, evictions, PDB refusals and violations, time and cost per node), the
   path of the roll's timeline (.demo/roll-timeline.html) and one line for IAM: how many AWS calls of the
   functions were judged against their own roles and how many refused (IAM is enforced as on AWS; a refused call
   fails the demo), the report of every call per function written to .demo/iam-report.txt; stops the sandbox
   unless --keep.

    python -m clm_sandbox.demo [--keep] [--wait-scale 0.1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from kubernetes import config
from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from clm.cli.follow import Outcome, follow, report
from clm.cli.tables import literal
from clm_sandbox.controlplane import CacheError, ControlPlane, ensure_built, verify_binaries
from clm_sandbox.demo.report import RunFigures, run_figures, write_timeline
from clm_sandbox.demo.watch import RollWatch, Workload, wait_for_rollout
from clm_sandbox.deploy.examples import EXAMPLES, Deployed, deploy_examples, upload_config
from clm_sandbox.iam import principals, record
from clm_sandbox.iam import report as iam_calls
from clm_sandbox.moto_server import SANDBOX_ENV, moto_server
from clm_sandbox.nodesim import NodeSimulator
from clm_sandbox.patches import wait_scale

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / ".demo"
IAM_LOG = OUT / "iam-calls.jsonl"
IAM_REPORT = OUT / "iam-report.txt"
CLUSTER = "kube-1"
OLD_AMI, NEW_AMI = "worker_ami: ami-0c1a7f89451184c8b", "worker_ami: ami-0d2b8f9a562295d9c"
console = Console()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m clm_sandbox.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the sandbox running at the end (Ctrl-C stops it)")
    parser.add_argument("--wait-scale", type=float, default=None, help="factor on Wait states (default: real time)")
    parser.add_argument("--boot-delay", type=float, default=2.0, help="seconds from instance launch to Ready Node")
    return parser


class DemoError(RuntimeError):
    """A step of the demo did not do what it shows."""


def clm(*args: str, env: dict[str, str]) -> None:
    """Run the real `clm` CLI as a user would, echoing the command; its output goes to the terminal."""
    console.print(f"[bold cyan]$ clm {' '.join(args)}[/]")
    console.file.flush()
    subprocess.run(
        [sys.executable, "-m", "clm.cli", *args], env=env, check=True, stdout=console.file, stderr=console.file
    )


def next_run(sfn: Any, machine: str, cluster_id: str, known: set[str], timeout: float = 120.0) -> str:
    """The first provision execution for the cluster started after `known`, once a trigger has started it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        executions = sfn.list_executions(stateMachineArn=machine)["executions"]
        for execution in sorted(executions, key=lambda e: e["startDate"]):
            arn = execution["executionArn"]
            if arn in known:
                continue
            described = sfn.describe_execution(executionArn=arn)
            if json.loads(described["input"]).get("cluster_id") == cluster_id:
                return arn
        time.sleep(0.2)
    raise DemoError(f"no provision run of {cluster_id} started within {timeout} s")


def followed(sfn: Any, machine: str, cluster_id: str, trigger: Callable[[], None]) -> Outcome:
    """Trigger a run, follow it live like `clm provision --follow`, and fail the demo if it failed."""
    known = {e["executionArn"] for e in sfn.list_executions(stateMachineArn=machine)["executions"]}
    trigger()
    outcome = follow(sfn, next_run(sfn, machine, cluster_id, known), console, poll_seconds=0.5)
    report(outcome, console)
    if not outcome.succeeded or outcome.skipped is not None:
        raise DemoError("the run did not do its work (see above)")
    return outcome


def summary(watch: RollWatch, figures: RunFigures, seconds: float) -> Table:
    """The roll in figures."""
    replaced = sum(1 for n in watch.nodes.values() if n.gone is not None)
    per_node = max(replaced, 1)
    workload = watch.workload
    table = Table(title="the roll", show_header=False)
    rows = [
        ("nodes replaced", f"{replaced}"),
        ("evictions", f"{figures.evictions}"),
        ("PDB refusals (429, retried after a Wait)", f"{figures.pdb_refusals}"),
        (
            f"PDB violations (Ready web pods < {workload.min_available})",
            f"{workload.violations} (lowest {workload.lowest}, {workload.samples} samples)",
        ),
        ("roll time", f"{seconds:.1f} s ({seconds / per_node:.1f} s per node)"),
        ("state transitions", f"{figures.transitions} ({figures.transitions / per_node:.1f} per node)"),
        ("Lambda calls", f"{figures.lambda_calls} ({figures.lambda_calls / per_node:.1f} per node)"),
        ("Lambda seconds", f"{figures.lambda_seconds:.1f} ({figures.lambda_seconds / per_node:.2f} per node)"),
        ("executions (provision + children)", f"{figures.executions}"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


@dataclass
class Sandbox:
    """What the demo started: AWS (moto's server), Kubernetes, the deployed CLM and its clients."""

    endpoint: str
    plane: ControlPlane
    kube_api: Any
    deployed: Deployed
    session: boto3.Session

    @property
    def outputs(self) -> dict[str, str]:
        """The outputs of the deployed CLM stack."""
        return self.deployed.outputs

    @property
    def env(self) -> dict[str, str]:
        """The environment for the `clm` CLI against this sandbox."""
        return {**os.environ, "CLM_REGISTRY_TABLE": self.outputs["RegistryTableName"]}


def start_sandbox(stack: ExitStack) -> Sandbox:
    """Steps 1 and 2: moto, the control plane, CLM deployed, the config uploaded, the kubeconfig secret."""
    console.print(Rule("1. sandbox: moto (AWS), Kubernetes control plane, node simulator"))
    build_log = OUT / "control-plane-build.log"
    try:
        verify_binaries()
    except CacheError:
        console.print(f"building the Kubernetes control plane from Debian sources (once, ~10 min): {build_log}")
    ensure_built(build_log)
    endpoint = stack.enter_context(moto_server())
    os.environ["AWS_ENDPOINT_URL"] = endpoint  # the in-process Lambda handlers' AWS
    plane = stack.enter_context(ControlPlane(log_dir=OUT / "control-plane"))
    console.print(f"AWS (moto) {endpoint}   Kubernetes {plane.server}   kubeconfig {plane.kubeconfig_path}")
    console.print(Rule("2. deploy CLM (the CDK app) and upload the config repository"))
    deployed = deploy_examples(endpoint, plane.kubeconfig_path, OUT / "clusters.yaml")
    for key in ("RegistryTableName", "ConfigBucketName", "ProvisionStateMachineArn"):
        console.print(f"  {key}: {deployed.outputs[key]}")
    console.print(f"  uploaded {deployed.config_files} files to {deployed.config_uri}/")
    session = boto3.Session(region_name=SANDBOX_ENV["AWS_DEFAULT_REGION"])
    kube_api = config.new_client_from_config(str(plane.kubeconfig_path))
    return Sandbox(endpoint, plane, kube_api, deployed, session)


@dataclass
class Rolled:
    """What the roll leaves to the summary: the watcher's account, the executions' figures, its seconds."""

    watch: RollWatch
    figures: RunFigures
    seconds: float


POLICY = "cluster/rollout.yaml"
# Uploaded with the new AMI. The built-in policy's health gate holds a cluster for 6 healthy checks 30 s apart after
# its run; the demo runs in real time, so it shows the gate with 2 checks 5 s apart (docs/rollouts.md, health gates).
DEMO_POLICY = """\
waves:
  - {name: all}
health: {hold: 10s, interval: 5s}
"""


def roll(sandbox: Sandbox, cluster_id: str) -> Rolled:
    """Step 4: a new AMI uploaded, the roll followed live and watched, then `clm status`."""
    console.print(Rule("4. a new worker AMI in the config: the upload starts reconcile, which rolls every node"))
    sfn, s3 = sandbox.session.client("stepfunctions"), sandbox.session.client("s3")
    defaults = "cluster/config-defaults.yaml"
    changed = {defaults: (EXAMPLES / "config" / defaults).read_text().replace(OLD_AMI, NEW_AMI), POLICY: DEMO_POLICY}
    watch = RollWatch(sandbox.kube_api, Workload("example", "app=web", min_available=2))
    watch.start()
    started = time.monotonic()
    bucket, machine = sandbox.outputs["ConfigBucketName"], sandbox.outputs["ProvisionStateMachineArn"]
    outcome = followed(sfn, machine, cluster_id, lambda: upload_config(s3, bucket, EXAMPLES / "config", changed))
    seconds = time.monotonic() - started
    watch.stop()
    quiet(sfn)
    clm("status", env=sandbox.env)
    return Rolled(watch, run_figures(sfn, outcome.arn), seconds)


def upload_reconciled(sfn: Any, reconcile: str, timeout: float = 60.0) -> None:
    """Wait for the upload's reconcile to start and end: it reads the registry, so a cluster registered while it
    runs gets a run from it beside the registry change's (one of them works, the other skips, and the demo would
    follow either)."""
    deadline = time.monotonic() + timeout
    while not sfn.list_executions(stateMachineArn=reconcile)["executions"]:
        if time.monotonic() > deadline:
            raise DemoError(f"the upload started no reconcile within {timeout:.0f} s")
        time.sleep(0.5)
    quiet(sfn, timeout, "waiting for the upload's reconcile (no cluster registered yet)")


def quiet(sfn: Any, timeout: float = 120.0, why: str = "") -> None:
    """Wait until no execution runs: reconcile follows the rollout until a look after the run records it completed
    (every 30 s), and the IAM report must hold every call the demo caused."""
    console.print(why or "waiting for reconcile's last look at the rollout (it records the rollout completed)")
    machines = [m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"]]
    deadline = time.monotonic() + timeout
    while any(sfn.list_executions(stateMachineArn=m, statusFilter="RUNNING")["executions"] for m in machines):
        if time.monotonic() > deadline:
            raise DemoError(f"executions still running {timeout:.0f} s after the roll")
        time.sleep(1.0)


def iam_report() -> list[record.Judgement]:
    """Every AWS call each function made, judged against its own role (IAM enforced as on AWS): the report, per
    function and action, written to IAM_REPORT (the roles' policies beside it); returns the judgements."""
    judgements = record.judged()
    iam_calls.save_policies(judgements, OUT / iam_calls.POLICIES_FILE)
    policies = {role: principals.role_policies(role)[0] for role in {j.role_arn for j in judgements}}
    IAM_REPORT.write_text(iam_calls.render(judgements, iam_calls.unexercised(judgements, policies)) + "\n")
    return judgements


def finish(rolled: Rolled) -> None:
    """Step 5: the summary, the timeline's path and one line for IAM; a PDB violation or a refused call fails the
    demo after them."""
    console.print(Rule("5. summary"))
    console.print(summary(rolled.watch, rolled.figures, rolled.seconds))
    nodes = list(rolled.watch.nodes.values())
    picture = write_timeline(OUT / "roll-timeline.html", nodes, f"CLM roll of {CLUSTER}", rolled.seconds)
    console.print(f"timeline of the roll: {picture.relative_to(ROOT)}")
    judgements = iam_report()
    line = f"{iam_calls.headline(judgements)}; details: {IAM_REPORT.relative_to(ROOT)}"
    console.print(line, highlight=False, soft_wrap=True)
    workload = rolled.watch.workload
    if workload.violations:
        raise DemoError(
            f"the PodDisruptionBudget was violated: {workload.violations} samples below {workload.min_available} "
            f"Ready web pods, the first {workload.first_violation:.1f} s into the roll"
        )
    refusals = iam_calls.refusals(judgements)
    if refusals:
        console.print("\n".join(refusals), highlight=False, soft_wrap=True)
        raise DemoError(f"a function made a call its role does not allow (above; {IAM_REPORT.relative_to(ROOT)})")


def keep(sandbox: Sandbox) -> None:
    """Leave the sandbox up until Ctrl-C, printing how to use it from a shell."""
    console.print("the sandbox keeps running; from a shell:")
    for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):
        console.print(f"  export {key}={os.environ[key]}")
    console.print(f"  export CLM_REGISTRY_TABLE={sandbox.outputs['RegistryTableName']}")
    console.print(f"  export KUBECONFIG={sandbox.plane.kubeconfig_path}")
    console.print("press Ctrl-C to stop it")
    with contextlib.suppress(KeyboardInterrupt):
        while True:
            time.sleep(3600)


def run(args: argparse.Namespace) -> None:
    """The demo's steps, in order."""
    with ExitStack() as stack:
        sandbox = start_sandbox(stack)
        console.print(Rule(f"3. register {CLUSTER}: the registry change starts its first run"))
        cluster_id = sandbox.deployed.cluster_id
        nodes = stack.enter_context(
            NodeSimulator(
                sandbox.kube_api, sandbox.session, cluster_id, boot_delay=args.boot_delay, pod_ready_delay=0.5
            )
        )
        sfn, machine = sandbox.session.client("stepfunctions"), sandbox.outputs["ProvisionStateMachineArn"]
        upload_reconciled(sfn, sandbox.outputs["ReconcileStateMachineArn"])
        followed(
            sfn,
            machine,
            cluster_id,
            lambda: clm("registry", "import", str(sandbox.deployed.clusters_file), env=sandbox.env),
        )
        nodes.wait_for_ready_nodes(3, timeout=60)
        # The budget guards the workload once it is up; the scheduler may place its pods seconds after the nodes.
        available = wait_for_rollout(sandbox.kube_api, "example", "web", timeout=60)
        console.print(f"example/web: {available} replicas available")
        finish(roll(sandbox, cluster_id))
        if args.keep:
            keep(sandbox)


def _terminal_only_for_the_demo() -> None:
    """Everything else this process prints (the in-process Lambdas' logs, moto's) goes to .demo/sandbox.log."""
    global console  # noqa: PLW0603 - the demo's one console, moved to the saved terminal
    sys.stdout.flush()
    sys.stderr.flush()
    terminal = os.fdopen(os.dup(1), "w", buffering=1)
    log = (OUT / "sandbox.log").open("w")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    console = Console(file=terminal, force_terminal=terminal.isatty() or None)


def main(argv: list[str] | None = None) -> None:
    """Run the demo end to end; stop the sandbox unless --keep. Exit 1, naming the log, if it fails."""
    args = _parser().parse_args(argv)
    started = time.monotonic()
    OUT.mkdir(exist_ok=True)
    _terminal_only_for_the_demo()
    os.environ.update(SANDBOX_ENV)
    IAM_LOG.unlink(missing_ok=True)
    os.environ[record.LOG_ENV] = str(IAM_LOG)
    wait_scale.set_factor(args.wait_scale)
    try:
        run(args)
    except Exception as exc:  # the demo's user gets one line and the log, not a traceback
        logging.exception("demo failed")
        details = f" {exc}  (details: {(OUT / 'sandbox.log').relative_to(ROOT)})"  # exc may quote a cluster's words
        console.print(literal(("demo failed:", "bold red"), details))
        sys.exit(1)
    console.print(Rule())
    console.print(f"[bold green]demo finished[/] in {time.monotonic() - started:.1f} s")
