"""Lambda Invoke in the sandbox (in-process moto): modes, configuration, environment and errors."""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from botocore.exceptions import ClientError

from clm_sandbox.patches import lambda_invoke

HANDLER = """
import os

GREETING = os.environ["GREETING"]  # read at import, as handlers do


def handler(event, context):
    return {"greeting": GREETING, "now": os.environ["GREETING"], "region": os.environ["AWS_REGION"], "event": event}
"""


def code_zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), text)  # same zip, same cache entry
    return buffer.getvalue()


def create_function(session: boto3.Session, name: str, files: dict[str, str], handler: str = "main.handler") -> None:
    role = session.client("iam").create_role(RoleName=name, AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    session.client("lambda").create_function(
        FunctionName=name,
        Runtime="python3.11",
        Role=role,
        Handler=handler,
        Code={"ZipFile": code_zip(files)},
        Environment={"Variables": {"GREETING": "one"}},
    )


def invoke(session: boto3.Session, name: str, event: object, **kwargs: str) -> dict:
    response = session.client("lambda").invoke(FunctionName=name, Payload=json.dumps(event), **kwargs)
    response["Payload"] = response["Payload"].read()
    return response


@pytest.fixture
def mode_reset() -> Iterator[None]:
    yield
    lambda_invoke.set_mode(None)


@pytest.mark.usefixtures("mode_reset")
def test_mode_comes_from_the_setter_then_the_environment_then_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lambda_invoke.MODE_ENV, raising=False)
    assert lambda_invoke.mode() == "inprocess"
    monkeypatch.setenv(lambda_invoke.MODE_ENV, "subprocess")
    assert lambda_invoke.mode() == "subprocess"
    lambda_invoke.set_mode("inprocess")
    assert lambda_invoke.mode() == "inprocess"
    monkeypatch.setenv(lambda_invoke.MODE_ENV, "docker")
    lambda_invoke.set_mode(None)
    with pytest.raises(ValueError, match=r"\$CLM_SANDBOX_LAMBDA_MODE: unknown Lambda mode 'docker'"):
        lambda_invoke.mode()
    with pytest.raises(ValueError, match="set_mode"):
        lambda_invoke.set_mode("thread")


def test_environment_is_the_functions_during_the_call_only(sandbox_aws: boto3.Session) -> None:
    create_function(sandbox_aws, "env", {"main.py": HANDLER})
    response = invoke(sandbox_aws, "env", {"k": "v"})
    assert json.loads(response["Payload"]) == {
        "greeting": "one",
        "now": "one",
        "region": "eu-central-1",
        "event": {"k": "v"},
    }
    assert "GREETING" not in os.environ


def test_a_configuration_change_imports_the_handler_afresh(sandbox_aws: boto3.Session) -> None:
    create_function(sandbox_aws, "config", {"main.py": HANDLER})
    invoke(sandbox_aws, "config", {})
    sandbox_aws.client("lambda").update_function_configuration(
        FunctionName="config", Environment={"Variables": {"GREETING": "two"}}
    )
    assert json.loads(invoke(sandbox_aws, "config", {})["Payload"])["greeting"] == "two"


def test_two_functions_with_the_same_module_name_do_not_mix(sandbox_aws: boto3.Session) -> None:
    for name in ("first", "second"):
        create_function(sandbox_aws, name, {"main.py": f"def handler(event, context):\n    return '{name}'\n"})
    assert [json.loads(invoke(sandbox_aws, name, {})["Payload"]) for name in ("first", "second")] == ["first", "second"]


def test_an_unimportable_handler_is_an_unhandled_runtime_error(sandbox_aws: boto3.Session) -> None:
    create_function(sandbox_aws, "broken", {"main.py": "import missing_dependency\n"})
    response = invoke(sandbox_aws, "broken", {})
    assert response["FunctionError"] == "Unhandled"
    assert json.loads(response["Payload"])["errorType"] == "Runtime.ImportModuleError"


def test_dry_run_does_not_run_the_handler(sandbox_aws: boto3.Session) -> None:
    create_function(sandbox_aws, "dry", {"main.py": "def handler(event, context):\n    raise RuntimeError('ran')\n"})
    response = invoke(sandbox_aws, "dry", {}, InvocationType="DryRun")
    assert response["StatusCode"] == 204
    assert "FunctionError" not in response


@pytest.mark.usefixtures("mode_reset")
def test_subprocess_mode_needs_a_moto_server(sandbox_aws: boto3.Session) -> None:
    create_function(sandbox_aws, "child", {"main.py": HANDLER})
    lambda_invoke.set_mode("subprocess")
    with pytest.raises(ClientError, match="Lambda function child: subprocess mode needs moto running as a server"):
        invoke(sandbox_aws, "child", {})


MEETING = """
import sys


def handler(event, context):
    sys.clm_test_barrier.wait(timeout=10)  # both calls inside their handler at once, or neither returns
    return __name__
"""


def test_calls_of_one_function_run_at_once_each_in_a_warm_container_of_its_own(
    sandbox_aws: boto3.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Lambda scales out: a Map state's iterations calling one function are not queued behind each other."""
    create_function(sandbox_aws, "wide", {"main.py": MEETING})
    monkeypatch.setattr(sys, "clm_test_barrier", threading.Barrier(2), raising=False)
    with ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(lambda _: invoke(sandbox_aws, "wide", {}), range(2)))
    assert [r.get("FunctionError") for r in responses] == [None, None]
    modules = {json.loads(r["Payload"]) for r in responses}
    assert len(modules) == 2  # two containers, each its own import of the handler
    monkeypatch.setattr(sys, "clm_test_barrier", threading.Barrier(1))
    assert json.loads(invoke(sandbox_aws, "wide", {})["Payload"]) in modules  # then a warm one is reused
