"""Shared fixtures: fake AWS credentials, in-process moto (plain and with the sandbox patches), moto's server."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import boto3
import pytest
from hypothesis import HealthCheck, settings
from moto import mock_aws

from clm_sandbox.moto_server import SERVER_CONFIG, moto_server_process
from clm_sandbox.patches import apply_all
from clm_sandbox.patches import wait_scale as wait_scaling
from tests import botocore_models, moto_reset

REGION = "eu-central-1"
botocore_models.share()  # AWS's service models parsed once per test process, not once per session
moto_reset.skip_rebuilding()  # each mock_aws still starts on new backends, without rebuilding the dropped ones
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # CDK's jsii on Node 20
# Property tests judge correctness, not speed: on a loaded 2-core CI machine a draw can stall for a second, which
# fails Hypothesis' generation-speed health check and per-example deadline without saying anything about CLM.
settings.register_profile("clm", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("clm")


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
    with moto_server_process(lambda_mode="subprocess") as endpoint:
        yield endpoint
