"""The calls Step Functions makes for an execution (Lambda invokes, child executions), signed with a session of
the execution's role, as on AWS, so that enforcement judges them against the state machine's role.

moto's interpreter signs every call of a task with fixed fake keys (``boto_client_for``), which nobody judges.
This patch finds the execution being evaluated (the interpreter's ``env``, a caller's local) and signs with its
role instead; a call made outside an execution keeps moto's keys.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from clm_sandbox.patches._patching import original, replace

SESSION = "StepFunctions"
# moto's modules that imported boto_client_for by name (the patch replaces each reference).
IMPORTERS = (
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils",
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_unsupported",
)
FRAMES_SEARCHED = 16


def install() -> None:
    """Sign the interpreter's calls with the execution's role (idempotent)."""
    import importlib

    from moto.stepfunctions.parser.asl.utils import boto_client

    replace(boto_client, "boto_client_for", _boto_client_for)
    for name in IMPORTERS:
        replace(importlib.import_module(name), "boto_client_for", _boto_client_for)


def _boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
    from clm_sandbox.iam import enforcement, principals

    role = _execution_role(sys._getframe(1))
    if role is None or not enforcement.enforcing():
        return _moto_client(region, service, state_credentials)
    credentials = principals.role_session(role, SESSION, region)
    keys = (credentials["AWS_ACCESS_KEY_ID"], credentials["AWS_SECRET_ACCESS_KEY"], credentials["AWS_SESSION_TOKEN"])
    return _signed_client(region, service, _endpoint(), keys)


def _moto_client(region: str, service: str, state_credentials: Any = None) -> Any:
    from moto.stepfunctions.parser.asl.utils import boto_client

    return original(boto_client, "boto_client_for")(region=region, service=service, state_credentials=state_credentials)


def _endpoint() -> str | None:
    """Where moto's interpreter sends its calls: nowhere (in-process moto) or this process's moto server."""
    from moto.core.models import botocore_stubber
    from moto.settings import moto_server_port

    return None if botocore_stubber.enabled else f"http://localhost:{moto_server_port()}"


@functools.lru_cache(maxsize=64)
def _signed_client(region: str, service: str, endpoint: str | None, keys: tuple[str, str, str]) -> Any:
    """moto's client for the service, signed with `keys` (a role session's); one per session, as clients are
    thread-safe and making one costs 30-60 ms of CPU (`endpoint`, moto's, is part of the key)."""
    import boto3

    client = _moto_client(region, service)
    access_key, secret_key, token = keys
    return boto3.client(
        service_name=service,
        region_name=region,
        endpoint_url=client.meta.endpoint_url,
        config=client.meta.config,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        aws_session_token=token,
    )


def _execution_role(frame: Any) -> str | None:
    """The role of the execution whose evaluation (an ``env`` local of a caller) makes this call."""
    for _ in range(FRAMES_SEARCHED):
        if frame is None:
            return None
        details = getattr(frame.f_locals.get("env"), "aws_execution_details", None)
        if details is not None:
            return details.role_arn
        frame = frame.f_back
    return None
