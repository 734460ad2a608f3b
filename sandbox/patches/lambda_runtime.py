"""Run a Python Lambda handler the way AWS's Python runtime does: import, context, result or error payload.

Standard library only, so that a child process (``python -m clm_sandbox.patches.lambda_runtime``) starts fast.
The child reads the event (JSON) on stdin and writes the response payload on stdout; everything the handler
prints goes to stderr (the function's log). Exit status 0 means success, 1 a function error whose payload
(``errorType``, ``errorMessage``, ``stackTrace``) is on stdout.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Handler = Callable[[Any, Any], Any]
EXIT_FUNCTION_ERROR = 1


@dataclass
class LambdaContext:
    """The context object a handler receives (the attributes AWS's runtime and powertools' Logger use)."""

    function_name: str
    function_version: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    aws_request_id: str
    log_group_name: str
    log_stream_name: str
    deadline_ms: int
    identity: Any = None
    client_context: Any = None
    tenant_id: str | None = field(default=None)

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the function's timeout."""
        return max(self.deadline_ms - int(time.time() * 1000), 0)


@dataclass(frozen=True)
class Invocation:
    """The outcome of one call: response payload, whether it is a function error, and the log text."""

    payload: bytes
    failed: bool
    log: str


class HandlerError(Exception):
    """The runtime could not load the handler (AWS's ``Runtime.*`` errors)."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def load_handler(handler: str, package: str | None = None) -> Handler:
    """Import ``path/module.function`` from sys.path, or from the already registered ``package`` if given."""
    module_path, _, function_name = handler.rpartition(".")
    if not module_path or not function_name:
        raise HandlerError("Runtime.MalformedHandlerName", f"Bad handler '{handler}': not enough values to unpack")
    module_name = module_path.replace("/", ".")
    try:
        module = importlib.import_module(f"{package}.{module_name}" if package else module_name)
    except SyntaxError as exc:
        raise HandlerError("Runtime.UserCodeSyntaxError", f"Syntax error in module '{module_name}': {exc}") from exc
    except ImportError as exc:
        raise HandlerError("Runtime.ImportModuleError", f"Unable to import module '{module_name}': {exc}") from exc
    function = getattr(module, function_name, None)
    if not callable(function):
        raise HandlerError("Runtime.HandlerNotFound", f"Handler '{function_name}' missing on module '{module_name}'")
    return function


def error_payload(exc: BaseException) -> dict[str, Any]:
    """The payload AWS returns for an unhandled exception (``errorType`` is the exception's class name)."""
    if isinstance(exc, HandlerError):
        return {"errorType": exc.error_type, "errorMessage": str(exc), "stackTrace": []}
    return {
        "errorType": type(exc).__name__,
        "errorMessage": str(exc),
        "stackTrace": traceback.format_list(traceback.extract_tb(exc.__traceback__)),
    }


def invoke(handler: Handler, event: Any, context: LambdaContext) -> tuple[bytes, bool]:
    """Call the handler; returns (response payload, whether it is a function error)."""
    try:
        result = handler(event, context)
    except Exception as exc:
        if exc.__traceback__ is not None:  # the stack trace starts in the handler, as AWS's does
            exc = exc.with_traceback(exc.__traceback__.tb_next)
        return failure(exc, context.aws_request_id), True
    try:
        return json.dumps(result).encode(), False
    except (TypeError, ValueError) as exc:
        return failure(
            HandlerError("Runtime.MarshalError", f"Unable to marshal response: {exc}"), context.aws_request_id
        ), True


def failure(exc: BaseException, request_id: str) -> bytes:
    """The encoded error payload of one invocation."""
    return json.dumps(error_payload(exc) | {"requestId": request_id}).encode()


def timeout_failure(request_id: str, timeout: float) -> bytes:
    """The payload AWS returns when a function runs past its timeout."""
    return failure(HandlerError("Sandbox.Timedout", f"Task timed out after {timeout:.2f} seconds"), request_id)


def context_from_environment(request_id: str, invoked_arn: str, timeout: float) -> LambdaContext:
    """The context of this invocation, from the standard Lambda environment variables; the clock starts now."""
    env = os.environ
    return LambdaContext(
        function_name=env["AWS_LAMBDA_FUNCTION_NAME"],
        function_version=env.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
        invoked_function_arn=invoked_arn,
        memory_limit_in_mb=int(env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")),
        aws_request_id=request_id,
        log_group_name=env.get("AWS_LAMBDA_LOG_GROUP_NAME", ""),
        log_stream_name=env.get("AWS_LAMBDA_LOG_STREAM_NAME", ""),
        deadline_ms=int((time.time() + timeout) * 1000),
    )


def main(argv: list[str]) -> int:
    """Child entry point: ``lambda_runtime REQUEST_ID INVOKED_ARN TIMEOUT_SECONDS``, handler from ``_HANDLER``.

    The timeout counts from the end of the handler's import (Lambda's init phase is separate).
    """
    request_id, invoked_arn, timeout = argv[0], argv[1], float(argv[2])
    response = _Response(os.dup(1))
    os.dup2(2, 1)  # whatever the handler prints is log output, never the response
    sys.stdout = sys.stderr
    event = json.loads(sys.stdin.buffer.read() or b"{}")
    try:
        handler = load_handler(os.environ["_HANDLER"])
    except HandlerError as exc:
        response.send(failure(exc, request_id))
        return EXIT_FUNCTION_ERROR
    context = context_from_environment(request_id, invoked_arn, timeout)
    watchdog = threading.Timer(timeout, response.send_timeout, (request_id, timeout))
    watchdog.daemon = True
    watchdog.start()
    payload, failed = invoke(handler, event, context)
    response.send(payload)
    return EXIT_FUNCTION_ERROR if failed else 0


class _Response:
    """The child's one response on the original stdout, sent by the handler's return or by the watchdog."""

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "wb")
        self._lock = threading.Lock()

    def send(self, payload: bytes) -> bool:
        with self._lock:
            if self._file.closed:
                return False
            self._file.write(payload)
            self._file.close()
            return True

    def send_timeout(self, request_id: str, timeout: float) -> None:
        if self.send(timeout_failure(request_id, timeout)):
            os._exit(EXIT_FUNCTION_ERROR)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
