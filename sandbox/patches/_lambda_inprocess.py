"""Run a Lambda handler inside this process: imported under a package unique to the function, its code and its
configuration, with the function's environment variables seen by the calling thread only.

Imported modules and the function's import paths stay, like a warm container. A function has as many warm
containers as calls of it ran at once (as Lambda scales out): each imports the handler under a package of its own.
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
_pools: dict[str, _Containers] = {}
UNTRACED = {"POWERTOOLS_TRACE_DISABLED": "true"}


def run_here(function: Any, code: FunctionCode, env: Mapping[str, str], event: Any, request_id: str) -> Invocation:
    """Call a moto ``LambdaFunction``'s handler in this process; the log holds the error of a failed call.

    Each call takes a warm container of the function that no other call is using, or starts one: calls run at the
    same time as Lambda runs them (a Map state's iterations, a handler whose AWS call makes moto invoke another
    function through the server), none waiting for another's container.
    """
    with _containers(function.function_arn).take() as container, thread_environment({**env, **UNTRACED}):
        with _loading:
            _add_import_paths(code.import_paths)
            try:
                package = _package_for(function, code, container)
                handler = lambda_runtime.load_handler(function.handler, package=package)
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


class _Containers:
    """A function's warm containers, by number: the free ones, and how many were started."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[int] = []
        self._started = 0

    @contextmanager
    def take(self) -> Iterator[int]:
        """A free container (the one freed last, as Lambda reuses a warm one), or a new one, for one call."""
        with self._lock:
            if self._free:
                container = self._free.pop()
            else:
                container, self._started = self._started, self._started + 1
        try:
            yield container
        finally:
            with self._lock:
                self._free.append(container)


def _containers(arn: str) -> _Containers:
    with _loading:
        return _pools.setdefault(arn, _Containers())


def _package_for(function: Any, code: FunctionCode, container: int = 0) -> str:
    """A package whose path is the function's root, named after the function, its code, its configuration and the
    container (the first one's name has no number)."""
    identity = json.dumps(
        [function.function_arn, str(code.root), [str(p) for p in code.layer_paths], function.environment_vars],
        sort_keys=True,
        default=str,
    )
    safe_name = "".join(c if c.isalnum() else "_" for c in function.function_name)
    name = f"_clm_lambda_{safe_name}_{hashlib.sha256(identity.encode()).hexdigest()[:16]}"
    name += f"_{container}" if container else ""
    if name not in sys.modules:
        package = types.ModuleType(name)
        package.__path__ = [str(code.root)]
        sys.modules[name] = package
    return name


def _add_import_paths(paths: list[Path]) -> None:
    """Put the function's code and layers on sys.path for good: its handler imports lazily while it runs, maybe
    alongside another function's call (like a warm container's /opt/python, they stay)."""
    sys.path[:0] = [str(path) for path in paths if str(path) not in sys.path]
