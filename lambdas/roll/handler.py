"""Lambda `roll`: see clm.workflow.roll_steps."""

from clm.workflow.lambda_handler import step_handler
from clm.workflow.roll_steps import STEPS

handler = step_handler("roll", STEPS)
