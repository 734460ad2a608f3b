"""Run a Lambda handler inside this process: imported under a package unique to the function, its code and its
configuration, with the function's environment variables seen by the calling thread only.

Calls are serialised (``sys.path`` and the handler's module globals are shared); imported modules stay loaded,
like a warm container.
Modules a handler imports by absolute name (its siblings, layer packages) are shared by name across functions.
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

_lock = threading.RLock()


def run_here(function: Any, code: FunctionCode, env: Mapping[str, str], event: Any, request_id: str) -> Invocation:
    """Call a moto ``LambdaFunction``'s handler in this process; the log holds the error of a failed call."""
    with _lock, thread_environment(env), _import_paths(code.import_paths):
        try:
            handler = lambda_runtime.load_handler(function.handler, package=_package_for(function, code))
        except lambda_runtime.HandlerError as exc:
            return Invocation(lambda_runtime.failure(exc, request_id), True, f"{exc.error_type}: {exc}\n")
        context = lambda_runtime.context_from_environment(request_id, function.function_arn, float(function.timeout))
        payload, failed = lambda_runtime.invoke(handler, event, context)
    return Invocation(payload, failed, (payload.decode() + "\n") if failed else "")


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
def _import_paths(paths: list[Path]) -> Iterator[None]:
    added = [str(path) for path in paths if str(path) not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for entry in added:
            sys.path.remove(entry)
