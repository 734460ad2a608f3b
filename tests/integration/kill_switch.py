"""Stop a provision execution from inside a Lambda call of its roll: a kill at an exact step, where polling the
execution's history lands wherever the machine's load lets it (or finds the run already ended)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from clm_sandbox.patches import lambda_invoke
from tests.integration.convergence import new_executions
from tests.integration.deployment import Deployment

When = Callable[[dict[str, Any]], bool]


class KillSwitch:
    """While open, every in-process Lambda call passes through it; once armed, the first call of a roll-node-pool
    execution that `when` accepts stops that roll and the new provision execution, then runs, as a Lambda
    invoked just before a stop does. `killed` is then that execution's ARN, `killed_at` the monotonic time."""

    def __init__(self, deployment: Deployment) -> None:
        self._deployment = deployment
        self._real = lambda_invoke.run_here
        self._lock = threading.Lock()
        self._armed: tuple[When, set[str], str] | None = None
        self.killed = ""
        self.killed_at = 0.0

    def arm(self, when: When, provisions: set[str], cause: str) -> None:
        """Kill at the first roll call `when` accepts; `provisions` are the provision executions that are not the
        run to kill (there is one other when the call comes), `cause` the stop's."""
        with self._lock:
            self._armed, self.killed, self.killed_at = (when, provisions, cause), "", 0.0

    def __enter__(self) -> KillSwitch:
        lambda_invoke.run_here = self._run_here
        return self

    def __exit__(self, *exc: object) -> None:
        lambda_invoke.run_here = self._real

    def _run_here(self, function: Any, code: Any, env: Any, event: Any, request_id: str) -> Any:
        if isinstance(event, dict) and _of_a_roll(event):
            self._maybe_kill(event)
        return self._real(function, code, env, event, request_id)

    def _maybe_kill(self, event: dict[str, Any]) -> None:
        with self._lock:
            if self._armed is None or not self._armed[0](event):
                return
            _, provisions, cause = self._armed
            self._armed = None
            [run] = [
                e["executionArn"] for e in new_executions(self._deployment, self._deployment.provision, provisions)
            ]
            self.killed, self.killed_at = run, time.monotonic()  # before the stop: a poller sees the kill first
            self._deployment.sfn.stop_execution(executionArn=run, cause=cause)
            # And the roll now: AWS stops a child with its parent at once, the sandbox once the parent's wait for it
            # returns, by when the roll could have gone on to its next state (a Terminate after the drain killed).
            self._deployment.sfn.stop_execution(executionArn=event["execution"], cause=cause)


def _of_a_roll(event: dict[str, Any]) -> bool:
    """Whether the Lambda call comes from a roll-node-pool execution (its ARN names the state machine)."""
    parts = str(event.get("execution", "")).split(":")
    return len(parts) > 1 and parts[-2].endswith("-roll-node-pool")


def nth_call(step: str, occurrence: int) -> When:
    """Accepts the `occurrence`-th call of `step`."""
    calls = 0

    def when(event: dict[str, Any]) -> bool:
        nonlocal calls
        calls += event.get("step") == step
        return event.get("step") == step and calls == occurrence

    return when
