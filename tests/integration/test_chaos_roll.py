"""Chaos on the roll: a provision execution killed at a random point of a node-pool roll, then triggered again.

One deployment and one cluster for every run (deploying the app per run would cost minutes). Each run gives the
cluster another AMI (so every node is outdated) and the pool a surge of 0 or 1 (so that Scale is a state to kill
at too), lets the registry change start provision, kills that execution at a seeded random point (the n-th entry
of a roll state, or a delay after the trigger), starts provision again and checks that the cluster converged:
every node outdated at the start replaced exactly once, three Ready nodes, the PodDisruptionBudget held, the
registry status consistent, no lock, the group's processes resumed. The roll function's budget is lowered so that
every roll hands over from one roll-node-pool execution to the next at least once: a kill can land at a handover.

A kill at a Task state of the roll is made by the Lambda call that state makes (the provision is stopped as the
call begins, the call then runs, as a Lambda invoked just before a stop does): polling the history for it raced
the roll's tail, a kill at Resume found the roll past it or, under load, the run ended. Pass, Wait and delay kill
points are polled; none of them is the roll's last state, so the run is still going when the poll sees them.

CLM_CHAOS_RUNS sets the number of runs, CLM_CHAOS_SEED the seed. A run takes 8-12 s on an idle 2-core machine and
up to three times that with the suite's other workers beside it (one provision killed, one to the end). The runs are
split in two halves, each its own test with its own deployment, so that parallel workers share them out.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass

import pytest
from kubernetes import client as k8s

from clm_sandbox.nodesim import NodeSimulator
from tests.integration.convergence import NODES, assert_converged, new_executions
from tests.integration.deployment import (
    Deployment,
    HealthyPods,
    instances,
    lower_roll_budget,
    register_example_cluster,
    the_run,
    wait_for_ready_pods,
)
from tests.integration.kill_switch import KillSwitch, nth_call

RUNS = int(os.environ.get("CLM_CHAOS_RUNS", "20"))
HALVES = [range(0, RUNS // 2), range(RUNS // 2, RUNS)]
SEED = int(os.environ.get("CLM_CHAOS_SEED", "20241122"))
AMIS = ("ami-0d2b8f9a562295d9c", "ami-0e3c9fab673306eaf", "ami-0c1a7f89451184c8b")
# Steps per roll execution (CLM_ROLL_STEPS_PER_EXECUTION): the first execution hands over after its third plan.
ROLL_STEPS = 4
# Roll states to kill at, with how many times each is surely entered (over the roll's chain of executions) while
# three nodes are replaced, by surge. HandOver#1 and Suspend#2 are the first handover, before and after. With a
# surge of 1 the first two nodes are a batch: DrainBatch drains and terminates them, Replace only the third. A node's
# drain terminates its instance as its pass drains it (TerminatedByDrain; Terminate only when that failed).
ROLL_STATES = {
    0: {"Suspend": 2, "Plan": 4, "WaitToPlan": 1, "Drain": 3, "TerminatedByDrain": 3, "HandOver": 1, "Resume": 1},
    1: {
        "Suspend": 2,
        "Plan": 4,
        "Scale": 2,
        "WaitToPlan": 1,
        "DrainBatch": 1,
        "Drain": 1,
        "TerminatedByDrain": 1,
        "HandOver": 1,
        "Resume": 1,
    },
}
# The roll's Task states, by the step their Lambda call names.
ROLL_TASK_STEPS = {
    "Suspend": "suspend",
    "Plan": "plan",
    "Scale": "scale",
    "DrainBatch": "drain_batch",
    "Drain": "drain",
    "Terminate": "terminate",
    "Resume": "resume",
}
MAX_DELAY = 6.0  # seconds after the trigger; the roll has not finished by then
KILL_TIMEOUT = 120.0
POLL = 0.05
MIN_AVAILABLE = 2  # the example app's PodDisruptionBudget

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),  # moto skips resources it does not model
    pytest.mark.timeout(120 + 60 * RUNS // 2),
]


@dataclass(frozen=True)
class KillPoint:
    """Where a run is killed: at the `occurrence`-th entry of a roll `state`, or `delay` seconds after the trigger."""

    state: str | None
    occurrence: int = 0
    delay: float = 0.0

    @classmethod
    def draw(cls, rng: random.Random, surge: int) -> KillPoint:
        """A random kill point: one of the roll's states (equally likely) or a delay."""
        states = ROLL_STATES[surge]
        choice = rng.choice([*states, None])
        if choice is None:
            return cls(None, delay=round(rng.uniform(0.5, MAX_DELAY), 1))
        return cls(choice, occurrence=rng.randint(1, states[choice]))

    def reached(self, elapsed: float, roll_states: list[str]) -> bool:
        """Whether a run `elapsed` seconds after its trigger, whose roll entered `roll_states`, is at the point."""
        if self.state is None:
            return elapsed >= self.delay
        return roll_states.count(self.state) >= self.occurrence

    def __str__(self) -> str:
        return f"{self.delay:.1f}s" if self.state is None else f"{self.state}#{self.occurrence}"


@dataclass(frozen=True)
class Kill:
    """A killed provision execution: after how long, and the last state its roll (if any) had entered."""

    execution: str
    seconds: float
    roll_state: str


def _change(deployment: Deployment, index: int, surge: int) -> None:
    """Give the cluster another AMI (the run's, or the next one if the cluster has it) and the pool a surge in the
    registry (a spec change: it starts provision)."""
    cluster = deployment.registry.get(deployment.cluster_id)
    current = cluster.config_items.get("worker_ami", AMIS[-1])  # the last is the example's config-defaults.yaml's
    ami = AMIS[index % len(AMIS)]
    cluster.config_items["worker_ami"] = ami if ami != current else AMIS[(index + 1) % len(AMIS)]
    cluster.node_pools[0].config_items["surge"] = str(surge)
    deployment.registry.put(cluster)


def _arns(deployment: Deployment, state_machine: str) -> set[str]:
    return {e["executionArn"] for e in deployment.executions(state_machine)}


def _kill(
    deployment: Deployment, point: KillPoint, provisions: set[str], rolls: set[str], started: float, calls: KillSwitch
) -> Kill:
    """Wait for the provision execution the trigger starts to reach `point`, then stop it (its roll stops with it).

    A Task state's point is left to `calls` (armed before the trigger). Never before the execution entered its
    first state: moto 5.2.5 cannot stop an execution whose worker has not started yet (AttributeError: 'NoneType'
    object has no attribute 'set_stop').
    """
    deadline = time.monotonic() + KILL_TIMEOUT
    execution = ""
    while time.monotonic() < deadline:
        if calls.killed:
            return Kill(calls.killed, calls.killed_at - started, point.state or "")
        if not execution:
            execution = next(
                (e["executionArn"] for e in new_executions(deployment, deployment.provision, provisions)), ""
            )
        elif deployment.sfn.describe_execution(executionArn=execution)["status"] != "RUNNING" and not calls.killed:
            pytest.fail(f"the run {execution} ended before its kill point {point}: {_why_ended(deployment, rolls)}")
        if execution and point.state not in ROLL_TASK_STEPS and deployment.states(execution):
            states = _roll_states(deployment, rolls) if point.state else []
            if point.reached(time.monotonic() - started, states):
                return _stop(deployment, execution, point, started, (states or ["-"])[-1])
        time.sleep(POLL)
    pytest.fail(f"kill point {point} not reached within {KILL_TIMEOUT} s")


def _stop(deployment: Deployment, execution: str, point: KillPoint, started: float, roll_state: str) -> Kill:
    deployment.sfn.stop_execution(executionArn=execution, cause=f"chaos: killed at {point}")
    return Kill(execution, time.monotonic() - started, roll_state)


def _why_ended(deployment: Deployment, rolls: set[str]) -> str:
    """The cluster's recorded problems and each new roll execution's status, error and last states."""
    problems = [p.to_dict() for p in deployment.registry.get(deployment.cluster_id).status.problems]
    chain = [
        (
            e["status"],
            deployment.sfn.describe_execution(executionArn=e["executionArn"]).get("cause"),
            deployment.states(e["executionArn"])[-4:],
        )
        for e in new_executions(deployment, deployment.roll_node_pool, rolls)
    ]
    return f"problems {problems}; roll executions {chain}"


def _roll_states(deployment: Deployment, rolls: set[str]) -> list[str]:
    """The states entered by the roll executions not in `rolls` (one roll's chain of executions), in order."""
    chain = new_executions(deployment, deployment.roll_node_pool, rolls)
    return [state for e in chain for state in deployment.states(e["executionArn"])]


@pytest.mark.parametrize("runs", HALVES, ids=lambda runs: f"runs-{runs.start}-{runs.stop - 1}")
def test_killed_at_random_points_of_the_roll_every_run_converges(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient, runs: range
) -> None:
    with KillSwitch(deployment) as calls:
        _chaos(deployment, nodes, kube_api, calls, runs)


def _chaos(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient, calls: KillSwitch, runs: range
) -> None:
    lower_roll_budget(deployment, ROLL_STEPS)
    register_example_cluster(deployment)
    the_run(deployment.settle(known=0))
    nodes.wait_for_ready_nodes(NODES, timeout=30)
    wait_for_ready_pods(kube_api, NODES)
    for index in runs:
        rng = random.Random(f"{SEED}:{index}")
        surge = rng.randint(0, 1)
        point = KillPoint.draw(rng, surge)
        provisions = _arns(deployment, deployment.provision)
        rolls = _arns(deployment, deployment.roll_node_pool)
        before, since = instances(deployment.session), len(deployment.terminations)
        watcher = HealthyPods(kube_api)
        watcher.start()
        try:
            started = time.monotonic()
            task = point.state in ROLL_TASK_STEPS  # else polled by _kill
            when = nth_call(ROLL_TASK_STEPS[point.state or ""], point.occurrence) if task else lambda _: False
            calls.arm(when, provisions, f"chaos: killed at {point}")
            _change(deployment, index, surge)
            kill = _kill(deployment, point, provisions, rolls, started, calls)
            deployment.settle()
            assert deployment.registry.lock_holder(deployment.cluster_id) in {None, kill.execution}
            again_started = time.monotonic()
            again = deployment.start()
            recovered = time.monotonic() - again_started
        finally:
            watcher.stop()
        killed = deployment.sfn.describe_execution(executionArn=kill.execution)["status"]
        killed_at = deployment.states(kill.execution)[-1]
        action = json.loads(again.get("output") or "{}").get("plan", {}).get("action", again["status"])
        print(  # the line that names a failing run: CLM_CHAOS_SEED and the run index reproduce it
            f"run {index:2d} seed {SEED}:{index} surge {surge} kill {point!s:<12} after {kill.seconds:4.1f} s "
            f"(roll at {kill.roll_state}, run {killed} at {killed_at}), again {recovered:4.1f} s ({action}), "
            f"lowest Ready {watcher.lowest}, total {time.monotonic() - started:4.1f} s"
        )
        assert_converged(deployment, nodes, again, before, since)
        assert watcher.lowest is not None and watcher.lowest >= MIN_AVAILABLE, (
            f"run {index} ({point}): {watcher.at_lowest}"
        )
        wait_for_ready_pods(kube_api, NODES)
