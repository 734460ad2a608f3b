"""Shared fixtures: fake AWS credentials, in-process moto (plain and with the sandbox patches), moto's server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import boto3
import pytest
from moto import mock_aws

from clm_sandbox.moto_server import READY_LINE, SANDBOX_ENV, SERVER_CONFIG
from clm_sandbox.patches import apply_all
from clm_sandbox.patches import wait_scale as wait_scaling

REGION = "eu-central-1"
MOTO_SERVER_START_SECONDS = 60
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # CDK's jsii on Node 20


@pytest.fixture(autouse=True)
def _fake_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never let a test reach a real AWS account."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")


@pytest.fixture
def aws() -> Iterator[boto3.Session]:
    """In-process moto for every AWS service; yields a boto3 session bound to it."""
    with mock_aws():
        yield boto3.Session(region_name=REGION)


@pytest.fixture
def sandbox_aws() -> Iterator[boto3.Session]:
    """In-process moto with every sandbox patch and Step Functions execution on; yields a boto3 session.

    Lambda handlers run in-process; Wait states and retries run in real time unless the test uses `wait_scale`.
    """
    apply_all()
    with mock_aws(config=SERVER_CONFIG):
        yield boto3.Session(region_name=REGION)


@pytest.fixture
def wait_scale() -> Iterator[Callable[[float], None]]:
    """A setter for the factor of Wait states and Retry intervals in this process (`wait_scale(0.001)`); reset after."""
    yield wait_scaling.set_factor
    wait_scaling.set_factor(None)


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """moto's server in a process of its own (patched; Lambda handlers in child processes; real-time waits).

    Shared by the session: tests use unique resource names. Clients need `endpoint_url=moto_endpoint`.
    """
    command = [sys.executable, "-m", "clm_sandbox.moto_server", "--lambda-mode", "subprocess"]
    env = {**os.environ, **SANDBOX_ENV}
    env.pop("AWS_ENDPOINT_URL", None)
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    try:
        line = _first_line(server, MOTO_SERVER_START_SECONDS)
        if not line.startswith(READY_LINE):
            raise RuntimeError(f"moto server ({' '.join(command)}) did not start: {line!r}")
        yield line.removeprefix(READY_LINE).strip()
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The process's first stdout line, or an empty string when it exits or `timeout` passes first."""
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            return ""
    return process.stdout.readline()
