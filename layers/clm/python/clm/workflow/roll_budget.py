"""How much work one roll-node-pool execution does before it hands the roll over to a successor.

Step Functions fails an execution at 25,000 history events, and a roll logs about 40 per node: a pool of a few
hundred nodes cannot be rolled by one execution. So an execution counts its steps (each plan, each node it took
out of service, and each drain pass after a node's first: a pass is a Task, a Choice and a Wait, ~9 events) and,
once the budget is spent and the pool is not done, answers `continue` instead of acting: it ends, and the
provision workflow starts the next execution, which observes the pool afresh. The count lives only in the
execution's own payload; nothing about the pool is carried over.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from clm.workflow.settings import SettingsError

STEPS_VARIABLE = "CLM_ROLL_STEPS_PER_EXECUTION"
# A step logs at most ~16 history events (a plan and its Wait: 9; a node: its first pass, its terminate and its Map
# iteration: ~14; a further pass: 9), so 300 steps are at most ~5,000 events: about 130 nodes rolled one at a
# time, and most of the 25,000 left for the drain passes of the last batch, which the budget cannot interrupt.
DEFAULT_STEPS = 300
CONTINUE = "continue"


def steps_per_execution(environ: Mapping[str, str] = os.environ) -> int:
    """The budget of one execution (CLM_ROLL_STEPS_PER_EXECUTION, default 300, at least 2)."""
    text = environ.get(STEPS_VARIABLE) or str(DEFAULT_STEPS)
    try:
        steps = int(text)
    except ValueError:
        raise SettingsError(f"{STEPS_VARIABLE}: expected a whole number, got {text!r}") from None
    if steps < 2:
        raise SettingsError(f"{STEPS_VARIABLE}: {steps} must be at least 2 (a plan and a node)")
    return steps


def spent(previous: Mapping[str, Any] | None) -> int:
    """The steps spent once the plan after `previous` (this execution's last decision, if any) is made: a replace
    decision's nodes, and the drain passes each took beyond its first (`passes`, one count a node), and those of
    its batch's passes beyond the first (`batch_drain.passes`)."""
    if not previous:
        return 1
    batch = int((previous.get("batch_drain") or {}).get("passes") or 0)  # a batch's passes over its nodes together
    extra = sum(max(int(count or 0) - 1, 0) for count in [*(previous.get("passes") or []), batch])
    return int(previous.get("spent", 0)) + 1 + len(previous.get("replace") or []) + extra


def within_budget(decision: dict[str, Any], previous: Mapping[str, Any] | None, budget: int) -> dict[str, Any]:
    """`decision` with the steps spent so far, or `continue` when the budget is spent and the pool is not done."""
    steps = spent(previous)
    if steps >= budget and decision.get("action") != "done":
        reason = f"{steps} of {budget} steps of this execution spent: the next execution continues"
        return {"action": CONTINUE, "reason": reason, "spent": steps, "deferred": decision.get("action")}
    return {**decision, "spent": steps}
