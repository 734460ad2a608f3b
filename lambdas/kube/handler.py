"""Lambda `kube`: see clm.workflow.kube_steps."""

from clm.workflow.kube_steps import STEPS
from clm.workflow.lambda_handler import step_handler

handler = step_handler("kube", STEPS)
