"""Lambda `run`: begin and end a cluster run, render its configuration, check targets (clm.workflow.run_steps)."""

from clm.workflow.lambda_handler import step_handler
from clm.workflow.run_steps import STEPS

handler = step_handler("run", STEPS)
