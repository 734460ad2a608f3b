"""The Lambda runtime of the sandbox: handler loading, AWS-shaped errors, and the child-process protocol."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from clm_sandbox.patches import lambda_runtime
from clm_sandbox.patches.lambda_runtime import HandlerError, LambdaContext, error_payload, invoke, load_handler


def context(timeout: float = 3.0) -> LambdaContext:
    return LambdaContext(
        function_name="fn",
        function_version="$LATEST",
        invoked_function_arn="arn:aws:lambda:eu-central-1:123456789012:function:fn",
        memory_limit_in_mb=128,
        aws_request_id="req-1",
        log_group_name="/aws/lambda/fn",
        log_stream_name="stream",
        deadline_ms=int((time.time() + timeout) * 1000),
    )


@pytest.fixture
def code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A function root on sys.path, with a module name unique to the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def write_module(root: Path, source: str) -> str:
    name = f"handler_{uuid.uuid4().hex}"
    (root / f"{name}.py").write_text(source)
    return name


def test_loads_a_handler_from_a_module_in_a_folder(code: Path) -> None:
    folder = code / f"pkg_{uuid.uuid4().hex}"
    folder.mkdir()
    (folder / "app.py").write_text("def handler(event, context):\n    return {'echo': event}\n")
    handler = load_handler(f"{folder.name}/app.handler")
    assert handler({"a": 1}, context()) == {"echo": {"a": 1}}


@pytest.mark.parametrize(
    ("source", "handler", "error_type"),
    [
        ("def handler(e, c):\n    return 1\n", "nodot", "Runtime.MalformedHandlerName"),
        ("import not_a_module_anywhere\n", "{module}.handler", "Runtime.ImportModuleError"),
        ("def handler(e, c)\n", "{module}.handler", "Runtime.UserCodeSyntaxError"),
        ("other = 1\n", "{module}.handler", "Runtime.HandlerNotFound"),
    ],
)
def test_load_errors_carry_aws_runtime_error_types(code: Path, source: str, handler: str, error_type: str) -> None:
    module = write_module(code, source)
    with pytest.raises(HandlerError) as raised:
        load_handler(handler.format(module=module))
    assert raised.value.error_type == error_type
    assert error_payload(raised.value)["errorType"] == error_type


class CustomError(Exception):
    pass


def test_an_exception_becomes_an_aws_error_payload_starting_in_the_handler() -> None:
    def handler(event: object, ctx: LambdaContext) -> None:
        raise CustomError("no way")

    payload, failed = invoke(handler, {}, context())
    assert failed
    error = json.loads(payload)
    assert error["errorType"] == "CustomError"
    assert error["errorMessage"] == "no way"
    assert error["requestId"] == "req-1"
    assert len(error["stackTrace"]) == 1
    assert "in handler" in error["stackTrace"][0]


def test_a_result_that_is_not_json_is_a_marshal_error() -> None:
    payload, failed = invoke(lambda event, ctx: {"when": object()}, {}, context())
    assert failed
    assert json.loads(payload)["errorType"] == "Runtime.MarshalError"


def test_remaining_time_counts_down_to_zero() -> None:
    assert 2_000 < context(3).get_remaining_time_in_millis() <= 3_000
    assert context(-1).get_remaining_time_in_millis() == 0


def run_child(root: Path, source: str, event: object, timeout: float = 10.0) -> subprocess.CompletedProcess[bytes]:
    module = write_module(root, source)
    env = {
        "PYTHONPATH": str(root),
        "_HANDLER": f"{module}.handler",
        "AWS_LAMBDA_FUNCTION_NAME": "fn",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
    }
    command = [sys.executable, "-m", lambda_runtime.__name__, "req-9", "arn:fn", str(timeout)]
    return subprocess.run(
        command, input=json.dumps(event).encode(), capture_output=True, env=env, timeout=60, check=False
    )


def test_child_answers_on_stdout_and_logs_on_stderr(tmp_path: Path) -> None:
    source = (
        "def handler(event, context):\n"
        "    print('log line')\n"
        "    return {'got': event, 'memory': context.memory_limit_in_mb, 'id': context.aws_request_id}\n"
    )
    done = run_child(tmp_path, source, {"x": 1})
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"got": {"x": 1}, "memory": 512, "id": "req-9"}
    assert b"log line" in done.stderr


def test_child_reports_a_handler_exception_with_exit_status_1(tmp_path: Path) -> None:
    done = run_child(
        tmp_path, "class Nope(Exception):\n    pass\ndef handler(event, context):\n    raise Nope('x')\n", {}
    )
    assert done.returncode == lambda_runtime.EXIT_FUNCTION_ERROR
    assert json.loads(done.stdout)["errorType"] == "Nope"


def test_child_times_out_like_lambda(tmp_path: Path) -> None:
    began = time.monotonic()
    done = run_child(tmp_path, "import time\ndef handler(event, context):\n    time.sleep(30)\n", {}, timeout=0.5)
    assert time.monotonic() - began < 15
    assert done.returncode == lambda_runtime.EXIT_FUNCTION_ERROR
    error = json.loads(done.stdout)
    assert error["errorType"] == "Sandbox.Timedout"
    assert "0.50 seconds" in error["errorMessage"]
