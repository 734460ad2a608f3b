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
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import types
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clm_sandbox.patches import lambda_runtime
from clm_sandbox.patches._lambda_code import FunctionCode, FunctionCodeError, unpack
from clm_sandbox.patches._patching import replace

MODE_ENV = "CLM_SANDBOX_LAMBDA_MODE"
MODES = ("inprocess", "subprocess")
INIT_ALLOWANCE_SECONDS = 10.0  # Lambda's init phase limit, on top of the function's timeout
LOG_RESULT_BYTES = 4096  # what x-amz-log-result carries: the last 4 KB of the log
SANDBOX_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "sandbox", "AWS_SECRET_ACCESS_KEY": "sandbox"}

_mode: str | None = None
_inprocess_lock = threading.RLock()


@dataclass(frozen=True)
class Invocation:
    """The outcome of one call: response payload, whether it is a function error, and the log text."""

    payload: bytes
    failed: bool
    log: str


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
    endpoint = None if botocore_stubber.enabled else moto_endpoint()
    env = lambda_environment(function, code, request_id, endpoint)
    started = time.monotonic()
    if mode() == "subprocess":
        if endpoint is None:
            raise _client_error(
                f"Lambda function {function.function_name}: subprocess mode needs moto running as a server "
                "(a child process cannot reach in-process mock_aws)"
            )
        payload, failed, output = _run_child(function, code, env, event, request_id)
    else:
        payload, failed, output = _run_here(function, code, env, event, request_id)
    duration_ms = (time.monotonic() - started) * 1000
    log = (
        f"START RequestId: {request_id} Version: {function.version}\n{output}"
        f"END RequestId: {request_id}\nREPORT RequestId: {request_id}\tDuration: {duration_ms:.2f} ms\n"
    )
    return Invocation(payload=payload, failed=failed, log=log)


def moto_endpoint() -> str:
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
            **SANDBOX_CREDENTIALS,
        }
    )
    if endpoint:
        env["AWS_ENDPOINT_URL"] = endpoint
    return env


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


def _run_here(
    function: Any, code: FunctionCode, env: dict[str, str], event: Any, request_id: str
) -> tuple[bytes, bool, str]:
    with _inprocess_lock, _environment(env), _import_paths(code.import_paths):
        try:
            handler = lambda_runtime.load_handler(function.handler, package=_package_for(function, code))
        except lambda_runtime.HandlerError as exc:
            return lambda_runtime.failure(exc, request_id), True, f"{exc.error_type}: {exc}\n"
        context = lambda_runtime.context_from_environment(request_id, function.function_arn, float(function.timeout))
        payload, failed = lambda_runtime.invoke(handler, event, context)
    return payload, failed, (payload.decode() + "\n") if failed else ""


def _package_for(function: Any, code: FunctionCode) -> str:
    """A package whose path is the function's root, named after the function, its code and its configuration."""
    identity = json.dumps(
        [function.function_arn, str(code.root), [str(p) for p in code.layer_paths], function.environment_vars],
        sort_keys=True,
        default=str,
    )
    safe_name = "".join(c if c.isalnum() else "_" for c in function.function_name)
    name = f"_clm_lambda_{safe_name}_{hashlib.sha256(identity.encode()).hexdigest()[:16]}"
    if name not in sys.modules:
        package = types.ModuleType(name)
        package.__path__ = [str(code.root)]
        sys.modules[name] = package
    return name


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def _import_paths(paths: list[Path]) -> Iterator[None]:
    added = [str(path) for path in paths if str(path) not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for entry in added:
            sys.path.remove(entry)


def _run_child(
    function: Any, code: FunctionCode, env: dict[str, str], event: Any, request_id: str
) -> tuple[bytes, bool, str]:
    child_env = {
        **{key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ},
        **env,
        "PYTHONPATH": os.pathsep.join(str(path) for path in code.import_paths),
        "TZ": ":UTC",
    }
    timeout = float(function.timeout)
    command = [sys.executable, "-m", lambda_runtime.__name__, request_id, function.function_arn, str(timeout)]
    try:
        done = subprocess.run(
            command,
            input=json.dumps(event).encode(),
            capture_output=True,
            env=child_env,
            cwd=code.root,
            timeout=timeout + INIT_ALLOWANCE_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = (exc.stderr or b"").decode(errors="replace")
        return lambda_runtime.timeout_failure(request_id, timeout), True, output
    output = done.stderr.decode(errors="replace")
    if done.returncode in (0, lambda_runtime.EXIT_FUNCTION_ERROR) and done.stdout:
        return done.stdout, done.returncode != 0, output
    exit_error = lambda_runtime.HandlerError(
        "Runtime.ExitError", f"RequestId: {request_id} Error: Runtime exited with error: exit status {done.returncode}"
    )
    return lambda_runtime.failure(exit_error, request_id), True, output
