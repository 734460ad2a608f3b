"""The budget of one roll-node-pool execution: a `continue` once its steps are spent and the pool is not done."""

from __future__ import annotations

import pytest

from clm.workflow.roll_budget import CONTINUE, DEFAULT_STEPS, spent, steps_per_execution, within_budget
from clm.workflow.settings import SettingsError

REPLACE_TWO = {"action": "replace", "replace": [{"instance_id": "i-1"}, {"instance_id": "i-2"}], "spent": 4}


def test_each_plan_and_each_node_taken_out_is_a_step():
    assert spent(None) == 1
    assert spent({"action": "start", "spent": 0}) == 1
    assert spent({"action": "wait", "spent": 3}) == 4
    assert spent(REPLACE_TWO) == 7


def test_the_decision_carries_the_steps_spent_until_the_budget_is_spent():
    assert within_budget({"action": "wait", "wait_seconds": 5}, REPLACE_TWO, 8) == {
        "action": "wait",
        "wait_seconds": 5,
        "spent": 7,
    }
    handed = within_budget({"action": "replace", "replace": [{"instance_id": "i-3"}]}, REPLACE_TWO, 7)
    assert handed == {
        "action": CONTINUE,
        "reason": "7 of 7 steps of this execution spent: the next execution continues",
        "spent": 7,
        "deferred": "replace",
    }


def test_a_pool_that_is_done_never_hands_over():
    assert within_budget({"action": "done"}, REPLACE_TWO, 2) == {"action": "done", "spent": 7}


def test_the_budget_is_a_deployment_setting():
    assert steps_per_execution({}) == DEFAULT_STEPS
    assert steps_per_execution({"CLM_ROLL_STEPS_PER_EXECUTION": "12"}) == 12
    with pytest.raises(SettingsError, match="CLM_ROLL_STEPS_PER_EXECUTION: expected a whole number, got 'x'"):
        steps_per_execution({"CLM_ROLL_STEPS_PER_EXECUTION": "x"})
    with pytest.raises(SettingsError, match="at least 2"):
        steps_per_execution({"CLM_ROLL_STEPS_PER_EXECUTION": "1"})


def test_each_drain_pass_after_a_nodes_first_is_a_step():
    assert spent({**REPLACE_TWO, "passes": [1, 4]}) == 7 + 3
    assert spent({**REPLACE_TWO, "passes": [1, 1]}) == 7


def test_each_batch_pass_after_the_first_is_a_step():
    """A batch's passes over its nodes together (DrainBatch: a Task, a Choice and a Wait each) count as a node's."""
    batch = {**REPLACE_TWO, "batch_drain": {"passes": 5}, "passes": [0, 2]}
    assert spent(batch) == 7 + 4 + 1
