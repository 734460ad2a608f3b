"""Lambda `stacks`: start and check the cluster's CloudFormation stacks (see clm.workflow.stack_steps)."""

from clm.workflow.lambda_handler import step_handler
from clm.workflow.stack_steps import STEPS

handler = step_handler("stacks", STEPS)
