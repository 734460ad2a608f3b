"""Run a Lambda handler inside this process: imported under a package unique to the function, its code and its
configuration, with the function's environment variables seen by the calling thread only.

Imported modules and the function's import paths stay, like a warm container.
Modules a handler imports by absolute name (its siblings, layer packages) are shared by name across functions.
Tracing is off here (``POWERTOOLS_TRACE_DISABLED``): X-Ray's patch of botocore is process-wide, so it would trace,
and warn about, every AWS call of the process that hosts the handlers (a test, the CLI). It runs in subprocess mode.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clm_sandbox.patches import lambda_runtime
from clm_sandbox.patches._lambda_code import FunctionCode
from clm_sandbox.patches._thread_environ import thread_environment
from clm_sandbox.patches.lambda_runtime import Invocation

_loading = threading.RLock()  # sys.path, sys.modules and the handlers' packages
_function_locks: dict[str, threading.RLock] = {}
UNTRACED = {"POWERTOOLS_TRACE_DISABLED": "true"}


def run_here(function: Any, code: FunctionCode, env: Mapping[str, str], event: Any, request_id: str) -> Invocation:
    """Call a moto ``LambdaFunction``'s handler in this process; the log holds the error of a failed call.

    Calls of one function are serialised (one warm container); different functions run at the same time, so a
    handler whose AWS call makes moto invoke another function (a DynamoDB stream's) through the server does not
    wait for itself.
    """
    with _function_lock(function.function_arn), thread_environment({**env, **UNTRACED}):
        with _loading:
            _add_import_paths(code.import_paths)
            try:
                handler = lambda_runtime.load_handler(function.handler, package=_package_for(function, code))
            except lambda_runtime.HandlerError as exc:
                return Invocation(lambda_runtime.failure(exc, request_id), True, f"{exc.error_type}: {exc}\n")
        context = lambda_runtime.context_from_environment(request_id, function.function_arn, float(function.timeout))
        with _own_default_session():
            payload, failed = lambda_runtime.invoke(handler, event, context)
    return Invocation(payload, failed, (payload.decode() + "\n") if failed else "")


@contextmanager
def _own_default_session() -> Iterator[None]:
    """boto3's default session as it was before the call: a handler calling ``boto3.client()`` creates it with the
    credentials of its role's session, which would otherwise stay for every later caller of this process."""
    import boto3

    before = boto3.DEFAULT_SESSION
    try:
        yield
    finally:
        boto3.DEFAULT_SESSION = before


def _function_lock(arn: str) -> threading.RLock:
    with _loading:
        return _function_locks.setdefault(arn, threading.RLock())


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


def _add_import_paths(paths: list[Path]) -> None:
    """Put the function's code and layers on sys.path for good: its handler imports lazily while it runs, maybe
    alongside another function's call (like a warm container's /opt/python, they stay)."""
    sys.path[:0] = [str(path) for path in paths if str(path) not in sys.path]
