"""Step Functions' own service integration (``arn:aws:states:::states:startExecution[.sync[:2]]``) as in AWS.

moto 5.2.5 took LocalStack's interpreter but not its request/response normalisation: the task passes the ASL's
``StateMachineArn``/``Input`` to boto3 as they are (boto3 wants ``stateMachineArn``: KeyError) and hands back
boto3's camelCase output, where AWS gives ``ExecutionArn``, ``Output``, ``Status``. This maps both through the
Step Functions service model, as LocalStack and AWS do; dates become epoch milliseconds, as AWS gives them.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

from clm_sandbox.patches._patching import original, replace


def install() -> None:
    """Give the interpreter's Step Functions task its parameter and response casing (idempotent)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
        StateTaskServiceSfn,
    )

    replace(StateTaskServiceSfn, "_normalise_parameters", _normalise_parameters)
    replace(StateTaskServiceSfn, "_normalise_response", _normalise_response)


@cache
def _operation(action: str) -> Any:
    import botocore.session

    model = botocore.session.get_session().get_service_model("stepfunctions")
    return model.operation_model("".join(part.title() for part in action.split("_")))


def _normalise_parameters(
    self: Any, parameters: dict, boto_service_name: str | None = None, service_action_name: str | None = None
) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
        StateTaskServiceSfn,
    )

    original(StateTaskServiceSfn, "_normalise_parameters")(self, parameters, boto_service_name, service_action_name)
    self._to_boto_request(parameters, _operation(self._get_boto_service_action(service_action_name)).input_shape)


def _normalise_response(
    self: Any, response: Any, boto_service_name: str | None = None, service_action_name: str | None = None
) -> None:
    self._from_boto_response(response, _operation(self._get_boto_service_action(service_action_name)).output_shape)
    if isinstance(response, dict):
        for key, value in response.items():
            if isinstance(value, datetime):
                response[key] = int(value.timestamp() * 1000)
