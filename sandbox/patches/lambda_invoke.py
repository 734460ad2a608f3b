"""Lambda Invoke runs the function's real Python handler without Docker.

moto 5.2.5 runs functions in Docker. Every invocation path (the Invoke API, which Step Functions' interpreter
uses for ``arn:aws:states:::lambda:invoke`` and direct function ARNs, and moto's internal event sources) ends
in ``LambdaFunction.invoke``, which this patch replaces. Two modes, per process:

- ``inprocess`` (default): import the handler from the function's unpacked zip (plus its layers) under a module
  name unique to the function, its code and its configuration, and call it with the function's environment
  variables set. Calls are serialised (a process has one environment), and modules stay loaded like a warm
  container. Works with in-process ``mock_aws`` and with moto's server.
- ``subprocess``: a fresh ``sys.executable`` per call with the function's environment, ``AWS_ENDPOINT_URL``
  pointing at this process's moto server (``MOTO_PORT``) and fake credentials; the function's Timeout is
  enforced. Only possible when moto runs as a server.

A handler that raises answers as AWS does: ``FunctionError: Unhandled`` and the payload ``{"errorType": <class
name>, "errorMessage", "stackTrace"}``, so Step Functions' Retry/Catch match the exception's class name.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import time
import uuid
from typing import Any

from clm_sandbox.patches._lambda_child import run_child
from clm_sandbox.patches._lambda_code import FunctionCode, FunctionCodeError, unpack
from clm_sandbox.patches._lambda_inprocess import run_here
from clm_sandbox.patches._patching import replace
from clm_sandbox.patches.lambda_runtime import Invocation

MODE_ENV = "CLM_SANDBOX_LAMBDA_MODE"
MODES = ("inprocess", "subprocess")
LOG_RESULT_BYTES = 4096  # what x-amz-log-result carries: the last 4 KB of the log
SANDBOX_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "sandbox", "AWS_SECRET_ACCESS_KEY": "sandbox"}

_mode: str | None = None


def install() -> None:
    """Replace moto's Docker-based ``LambdaFunction.invoke`` (idempotent)."""
    from moto.awslambda.models import LambdaFunction

    replace(LambdaFunction, "invoke", _invoke)


def set_mode(mode: str | None) -> None:
    """Choose ``inprocess`` or ``subprocess`` for this process; None falls back to ``$CLM_SANDBOX_LAMBDA_MODE``."""
    global _mode  # noqa: PLW0603 - one setting per process, by design
    _mode = _checked(mode, "set_mode()") if mode is not None else None


def mode() -> str:
    """The mode in force: the one set, else ``$CLM_SANDBOX_LAMBDA_MODE``, else ``inprocess``."""
    return _mode or _checked(os.environ.get(MODE_ENV) or "inprocess", f"${MODE_ENV}")


def _checked(mode: str, source: str) -> str:
    if mode not in MODES:
        raise ValueError(f"{source}: unknown Lambda mode {mode!r} (expected one of {', '.join(MODES)})")
    return mode


def run(function: Any, event: Any) -> Invocation:
    """Run a moto ``LambdaFunction``'s handler on ``event`` in the mode in force."""
    from moto.core.models import botocore_stubber

    try:
        code = unpack(function)
    except FunctionCodeError as exc:
        raise _client_error(str(exc)) from exc
    request_id = str(uuid.uuid4())
    endpoint = None if botocore_stubber.enabled else server_endpoint()
    env = lambda_environment(function, code, request_id, endpoint)
    started = time.monotonic()
    if mode() == "subprocess":
        if endpoint is None:
            raise _client_error(
                f"Lambda function {function.function_name}: subprocess mode needs moto running as a server "
                "(a child process cannot reach in-process mock_aws)"
            )
        outcome = run_child(function, code, env, event, request_id)
    else:
        outcome = run_here(function, code, env, event, request_id)
    duration_ms = (time.monotonic() - started) * 1000
    log = (
        f"START RequestId: {request_id} Version: {function.version}\n{outcome.log}"
        f"END RequestId: {request_id}\nREPORT RequestId: {request_id}\tDuration: {duration_ms:.2f} ms\n"
    )
    return dataclasses.replace(outcome, log=log)


def server_endpoint() -> str:
    """This process's moto server, as moto itself addresses it (``MOTO_PORT``)."""
    from moto import settings

    return f"http://127.0.0.1:{settings.moto_server_port()}"


def lambda_environment(function: Any, code: FunctionCode, request_id: str, endpoint: str | None) -> dict[str, str]:
    """The function's environment variables plus the ones Lambda sets (these win, as in AWS)."""
    env = {str(key): str(value) for key, value in function.environment_vars.items()}
    env.update(
        {
            "AWS_LAMBDA_FUNCTION_NAME": function.function_name,
            "AWS_LAMBDA_FUNCTION_VERSION": str(function.version),
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
            "AWS_LAMBDA_LOG_GROUP_NAME": function.logs_group_name,
            "AWS_LAMBDA_LOG_STREAM_NAME": f"sandbox/[{function.version}]{request_id}",
            "AWS_REGION": function.region,
            "AWS_DEFAULT_REGION": function.region,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{function.run_time}",
            "LAMBDA_TASK_ROOT": str(code.root),
            "_HANDLER": function.handler,
            "_X_AMZN_TRACE_ID": trace_header(),
            **function_credentials(function),
        }
    )
    if endpoint:
        env["AWS_ENDPOINT_URL"] = endpoint
    return env


def function_credentials(function: Any) -> dict[str, str]:
    """Credentials of a session of the function's execution role, as Lambda gives them, when IAM is enforced
    (clm_sandbox.iam): its calls are then judged against the role's policies. Else the sandbox's admin key."""
    from clm_sandbox.iam import enforcement, principals

    if not enforcement.enforcing():
        return SANDBOX_CREDENTIALS
    return principals.role_session(function.role, function.function_name, function.region)


def trace_header() -> str:
    """A sampled X-Ray trace header, as Lambda sets it for active tracing (the segments go to a daemon address
    nobody listens on). Without it the X-Ray SDK warns on every call that the Lambda worker is initialising."""
    root = f"1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]}"
    return f"Root={root};Parent={uuid.uuid4().hex[:16]};Sampled=1"


def _invoke(self: Any, body: str | bytes, request_headers: Any, response_headers: Any) -> bytes:
    """Replacement for ``LambdaFunction.invoke``: same contract, real handler."""
    if _header(request_headers, "x-amz-invocation-type") == "DryRun":
        return b""
    try:
        event = json.loads(body) if body else {}
    except ValueError as exc:
        raise _client_error(
            f"Lambda function {self.function_name}: could not parse request body into json: {exc}",
            code="InvalidRequestContentException",
        ) from exc
    invocation = run(self, event)
    self.logs_backend.ensure_log_group(self.logs_group_name)
    self.save_logs(invocation.log)
    if invocation.failed:
        response_headers["x-amz-function-error"] = "Unhandled"
    tail = invocation.log.encode()[-LOG_RESULT_BYTES:]
    response_headers["x-amz-log-result"] = base64.b64encode(tail).decode()
    return invocation.payload


def _header(headers: Any, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return value
    return None


def _client_error(message: str, code: str = "ServiceException") -> Exception:
    from moto.awslambda.exceptions import LambdaClientError

    return LambdaClientError(code, message)
