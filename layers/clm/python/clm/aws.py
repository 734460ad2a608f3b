"""boto3 clients, created once per process and credentials (a Lambda container reuses them across invocations)."""

from __future__ import annotations

import functools
import os
from typing import Any


def client(service: str) -> Any:
    """A boto3 client for `service`; AWS_ENDPOINT_URL (the sandbox) and AWS_REGION apply as usual.

    Clients are kept per access key: a process whose credentials change (the sandbox runs every function's
    handler in one process, each with its own role's session) never calls with another principal's client."""
    return _client(service, os.environ.get("AWS_ACCESS_KEY_ID"))


@functools.cache
def _client(service: str, _access_key: str | None) -> Any:
    import boto3

    # A session of its own: boto3's default session keeps the first credentials it resolved for good.
    return boto3.Session().client(service)


def forget_clients() -> None:
    """Drop every kept client (tests that start a new moto)."""
    _client.cache_clear()
