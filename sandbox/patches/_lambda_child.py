"""Run a Lambda handler in a fresh ``sys.executable`` (``python -m clm_sandbox.patches.lambda_runtime``).

The child gets only the function's environment (plus PATH, HOME and LANG), its code and layers on PYTHONPATH and
its root as working directory, like ``/var/task``. The function's Timeout is enforced by the child's watchdog;
this side kills a child that is still alive after the timeout plus Lambda's init allowance.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from clm_sandbox.patches import lambda_runtime
from clm_sandbox.patches._lambda_code import FunctionCode
from clm_sandbox.patches.lambda_runtime import Invocation

INIT_ALLOWANCE_SECONDS = 10.0  # Lambda's init phase limit, on top of the function's timeout
INHERITED = ("PATH", "HOME", "LANG")


def run_child(function: Any, code: FunctionCode, env: Mapping[str, str], event: Any, request_id: str) -> Invocation:
    """Call a moto ``LambdaFunction``'s handler in a child process; the log is what the child wrote to stderr."""
    child_env = {
        **{key: os.environ[key] for key in INHERITED if key in os.environ},
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
        return Invocation(lambda_runtime.timeout_failure(request_id, timeout), True, output)
    output = done.stderr.decode(errors="replace")
    if done.returncode in (0, lambda_runtime.EXIT_FUNCTION_ERROR) and done.stdout:
        return Invocation(done.stdout, done.returncode != 0, output)
    exit_error = lambda_runtime.HandlerError(
        "Runtime.ExitError", f"RequestId: {request_id} Error: Runtime exited with error: exit status {done.returncode}"
    )
    return Invocation(lambda_runtime.failure(exit_error, request_id), True, output)
