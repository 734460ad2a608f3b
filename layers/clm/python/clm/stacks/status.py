"""CloudFormation stack statuses, grouped by what CLM does with them."""

from __future__ import annotations

from typing import Literal

Outcome = Literal["in_progress", "complete", "failed", "deleted"]

COMPLETE = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"})
# Stable states from which update_stack is accepted.
UPDATABLE = COMPLETE | {"UPDATE_ROLLBACK_COMPLETE", "IMPORT_ROLLBACK_COMPLETE"}
DELETED = "DELETE_COMPLETE"
DELETING = "DELETE_IN_PROGRESS"
ROLLED_BACK_CREATE = "ROLLBACK_COMPLETE"
ROLLBACK_FAILED_UPDATE = "UPDATE_ROLLBACK_FAILED"
# Ends in *_IN_PROGRESS but never moves on by itself: a change set created outside CLM was not executed.
REVIEW = "REVIEW_IN_PROGRESS"


def is_in_progress(status: str) -> bool:
    """True while CloudFormation is still working on the stack."""
    return status.endswith("_IN_PROGRESS") and status != REVIEW


def outcome(status: str) -> Outcome:
    """What a waiting workflow makes of the status: still in progress, complete, failed or deleted."""
    if status == DELETED:
        return "deleted"
    if is_in_progress(status):
        return "in_progress"
    if status in COMPLETE:
        return "complete"
    return "failed"
