"""boto3 clients, created once per process (a Lambda container reuses them across invocations)."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def client(service: str) -> Any:
    """A boto3 client for `service`; AWS_ENDPOINT_URL (the sandbox) and AWS_REGION apply as usual."""
    import boto3

    return boto3.client(service)
