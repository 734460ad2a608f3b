"""Terminating drained nodes' instances from a batch's pass (clm.workflow.terminations.Terminations)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

from botocore.exceptions import ClientError

from clm.workflow.terminations import Terminations, terminated_now

REPLACE = [
    {"instance_id": "i-1", "node": "n1", "decrement": False},
    {"instance_id": "i-2", "node": "n2", "decrement": True},
    {"instance_id": "i-3", "node": "n3", "decrement": False},
    {"instance_id": "i-4", "node": None, "decrement": False},
]


class FakeAutoScaling:
    """i-1 terminates, i-2 has left its group already, i-3's call fails."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []
        self.lock = threading.Lock()

    def terminate_instance_in_auto_scaling_group(self, **call: Any) -> Any:
        instance = call["InstanceId"]
        with self.lock:
            self.calls.append((instance, call["ShouldDecrementDesiredCapacity"]))
        errors = {"i-2": ("ValidationError", "not part of Auto Scaling group"), "i-3": ("Throttling", "slow down")}
        if instance in errors:
            code, message = errors[instance]
            raise ClientError({"Error": {"Code": code, "Message": message}}, "TerminateInstanceInAutoScalingGroup")
        return {"Activity": {"StatusCode": "InProgress"}}


def test_each_drained_node_is_terminated_once_as_the_plan_says_and_failures_are_left_to_replace(caplog):
    autoscaling, started = FakeAutoScaling(), time.time() - 0.01
    made: list[tuple[str, str]] = []

    def client(service: str) -> FakeAutoScaling:
        made.append((service, threading.current_thread().name))
        return autoscaling

    where = SimpleNamespace(client=client)
    with Terminations(where, REPLACE, "cluster") as terminations:  # type: ignore[arg-type]
        for node in ["n1", "n2", "n1", "n3", "elsewhere"]:  # a node not of the batch is never touched
            terminations.start(node)
        states = terminations.states()
    # n3's failed: Replace's Terminate does it, with retries
    assert {node: state for node, (state, _) in states.items()} == {"n1": "InProgress", "n2": "already"}
    assert all(started <= at <= time.time() + 0.01 for _, at in states.values())  # rounded to 0.01 s
    assert sorted(autoscaling.calls) == [("i-1", False), ("i-2", True), ("i-3", False)]
    assert "n3 failed; Replace terminates it" in caplog.text
    assert made == [("autoscaling", threading.current_thread().name)]  # once, in the step's thread


def test_a_one_node_drain_terminates_its_drained_node_at_once_and_leaves_a_failure_to_replace(caplog):
    autoscaling, started = FakeAutoScaling(), time.time() - 0.01
    where = SimpleNamespace(client=lambda service: autoscaling)
    done = terminated_now(where, REPLACE[1], "cluster")  # type: ignore[arg-type]
    assert done["terminated"] == "already" and started <= done["terminated_at"] <= time.time() + 0.01
    assert terminated_now(where, REPLACE[2], "cluster") == {}  # type: ignore[arg-type]  # Replace's Terminate then
    assert autoscaling.calls == [("i-2", True), ("i-3", False)]
    assert "drained node n3 failed; Replace terminates it" in caplog.text
