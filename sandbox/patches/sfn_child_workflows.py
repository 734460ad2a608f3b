"""Step Functions' own service integration (``arn:aws:states:::states:startExecution[.sync[:2]]``) as in AWS.

moto 5.2.5 took LocalStack's interpreter but not its request/response normalisation: the task passes the ASL's
``StateMachineArn``/``Input`` to boto3 as they are (boto3 wants ``stateMachineArn``: KeyError) and hands back
boto3's camelCase output, where AWS gives ``ExecutionArn``, ``Output``, ``Status``. This maps both through the
Step Functions service model, as LocalStack and AWS do; dates become epoch milliseconds, as AWS gives them.
And when the parent execution stops while it waits for a child (``.sync``/``.sync:2``), the child is stopped
too, as in AWS (which is why the task's role needs ``states:StopExecution``); moto left it running.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

from clm_sandbox.patches._patching import original, replace


def install() -> None:
    """Give the interpreter's Step Functions task AWS's casing and stop propagation (idempotent)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
        StateTaskServiceSfn,
    )

    replace(StateTaskServiceSfn, "_normalise_parameters", _normalise_parameters)
    replace(StateTaskServiceSfn, "_normalise_response", _normalise_response)
    replace(StateTaskServiceSfn, "_eval_sync", _eval_sync)
    for builder in ("_build_sync_resolver", "_build_sync2_resolver"):
        replace(StateTaskServiceSfn, builder, _remembering_child(builder))


def _remembering_child(builder: str) -> Any:
    """A resolver builder that notes the child's execution ARN (the builder pops it off the stack)."""

    def build(self: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
        from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
            StateTaskServiceSfn,
        )

        env.clm_child_execution = env.stack[-1]["ExecutionArn"]
        return original(StateTaskServiceSfn, builder)(self, env, *args, **kwargs)

    return build


def _eval_sync(self: Any, env: Any, sync_resolver: Any, *args: Any, **kwargs: Any) -> Any:
    """Wait for the child as moto does; if the parent stopped meanwhile, stop the child."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (
        StateTaskServiceCallback,
    )
    from moto.stepfunctions.parser.asl.utils.boto_client import boto_client_for

    outcome = StateTaskServiceCallback._eval_sync(self, env, sync_resolver, *args, **kwargs)
    child = getattr(env, "clm_child_execution", None)
    if child and not env.is_running():
        sfn = boto_client_for(region=child.split(":")[3], service="stepfunctions")
        if sfn.describe_execution(executionArn=child)["status"] == "RUNNING":
            sfn.stop_execution(executionArn=child, cause="The parent execution was stopped.")
    return outcome


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
