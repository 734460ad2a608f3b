"""Results of the non-blocking stack operations, small enough for Step Functions payloads."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from clm.stacks.errors import StackFailed
from clm.stacks.events import Failure
from clm.stacks.status import Outcome

StartAction = Literal["created", "update_started", "unchanged", "waiting", "recreating", "rollback_continued"]
DeleteAction = Literal["delete_started", "waiting", "absent"]
NextStep = Literal["check", "start", "done"]

# After `start`: poll `check` until the operation ends, call `start` again after a wait
# (the stack was busy or is being repaired first), or go on.
_START_NEXT: dict[str, NextStep] = {
    "created": "check",
    "update_started": "check",
    "unchanged": "done",
    "waiting": "start",
    "recreating": "start",
    "rollback_continued": "start",
}
_DELETE_NEXT: dict[str, NextStep] = {"delete_started": "check", "waiting": "check", "absent": "done"}


@dataclass(frozen=True)
class StartResult:
    """What `start` did. `status` is the stack's status before (empty when it did not exist)."""

    stack_name: str
    action: StartAction
    status: str = ""
    stack_id: str = ""

    @property
    def next_step(self) -> NextStep:
        """`check`, `start` (again, after a wait) or `done`."""
        return _START_NEXT[self.action]

    def to_dict(self) -> dict[str, str]:
        """Plain dict for Step Functions payloads."""
        return {**asdict(self), "next_step": self.next_step}


@dataclass(frozen=True)
class DeleteResult:
    """What `start_delete` did. `status` is the stack's status before (empty when it did not exist)."""

    stack_name: str
    action: DeleteAction
    status: str = ""

    @property
    def next_step(self) -> NextStep:
        """`check` until the state is `deleted`, or `done`."""
        return _DELETE_NEXT[self.action]

    def to_dict(self) -> dict[str, str]:
        """Plain dict for Step Functions payloads."""
        return {**asdict(self), "next_step": self.next_step}


@dataclass(frozen=True)
class StackState:
    """Where a stack's operation stands; for `failed`, the first failed resource of the latest operation."""

    stack_name: str
    state: Outcome
    status: str
    reason: str = ""
    failure: Failure | None = None
    wait_seconds: int = 0  # in_progress: when to look again (clm.stacks.deploy.poll_seconds)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for Step Functions payloads (failure fields empty unless a resource failed)."""
        failure = self.failure
        return {
            "stack_name": self.stack_name,
            "state": self.state,
            "status": self.status,
            "reason": self.reason,
            "wait_seconds": self.wait_seconds,
            "failed_resource": failure.resource if failure else "",
            "failed_resource_type": failure.resource_type if failure else "",
            "failed_reason": failure.reason if failure else "",
        }

    def raise_if_failed(self, cluster_id: str) -> None:
        """Raise StackFailed (naming cluster, stack and resource) when the state is `failed`."""
        if self.state == "failed":
            raise StackFailed(cluster_id, self.stack_name, self.status, self.failure, self.reason)
