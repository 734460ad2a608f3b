"""Lambda `reconcile`: see clm.workflow.reconcile_steps."""

from clm.workflow.lambda_handler import step_handler
from clm.workflow.reconcile_steps import STEPS

handler = step_handler("reconcile", STEPS)
