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
    # A session of its own: boto3's default session keeps the first credentials it resolved for good.
    return session().client(service)


def session(**arguments: Any) -> Any:
    """A boto3 Session of `arguments` (credentials, region; none: the environment's) whose service models come from
    the process's one botocore loader: a session of its own parses its own copy of each model it uses (~3 MiB and
    ~10 ms for CloudFormation's, 15 MiB for EC2's: bench/target_sessions.py)."""
    import boto3
    import botocore.session

    core = botocore.session.Session()
    loader = _loader()
    core.register_component("data_loader", loader)
    made = boto3.Session(botocore_session=core, **arguments)
    loader.search_paths[:] = list(dict.fromkeys(loader.search_paths))  # boto3 appends its data path per session
    return made


@functools.cache
def _loader() -> Any:
    from botocore.loaders import create_loader

    return create_loader()


def forget_clients() -> None:
    """Drop every kept client (tests that start a new moto)."""
    _client.cache_clear()
