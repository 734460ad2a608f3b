"""moto in server mode on a free loopback port, with the sandbox's patches and Step Functions execution on.

In a thread (:func:`moto_server`, for the demo) or as a process of its own (:func:`moto_server_process`)::

    python -m clm_sandbox.moto_server [--port N] [--lambda-mode inprocess|subprocess] [--wait-scale F]

which prints ``moto server at <endpoint>`` once it serves, and runs until SIGTERM or SIGINT. A process of its
own keeps moto's global state (backends, config) apart from the caller's, e.g. a test session's ``mock_aws``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from clm_sandbox.patches import apply_all, lambda_invoke, wait_scale

SANDBOX_ENV = {
    "AWS_ACCESS_KEY_ID": "sandbox",
    "AWS_SECRET_ACCESS_KEY": "sandbox",
    "AWS_DEFAULT_REGION": "eu-central-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
}
SERVER_CONFIG = {"stepfunctions": {"execute_state_machine": True}}
READY_LINE = "moto server at "
MODULE = "clm_sandbox.moto_server"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def moto_server(port: int | None = None) -> Iterator[str]:
    """Run moto's server in a thread; yields its endpoint URL and always stops it.

    Installs the sandbox patches, switches Step Functions execution on through ``/moto-api/config`` and sets
    ``MOTO_PORT`` (how moto's interpreter and the Lambda patch find the server); both are restored on exit.
    moto's state is global to the process: one server per process.
    """
    from moto.core.config import default_user_config
    from moto.server import ThreadedMotoServer

    apply_all()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log lines in the demo output
    port = port or free_port()
    endpoint = f"http://127.0.0.1:{port}"
    saved_config, saved_port = default_user_config.get("stepfunctions"), os.environ.get("MOTO_PORT")
    os.environ["MOTO_PORT"] = str(port)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        _post_config(endpoint, SERVER_CONFIG)
        yield endpoint
    finally:
        server.stop()
        default_user_config["stepfunctions"] = saved_config or {}
        if saved_port is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = saved_port


@contextmanager
def moto_server_process(
    lambda_mode: str | None = None, wait_scale: float | None = None, start_timeout: float = 60.0
) -> Iterator[str]:
    """Run ``python -m clm_sandbox.moto_server`` as a child process; yields its endpoint and always stops it.

    The child has moto's global state to itself, apart from this process's (e.g. a test session's mock_aws).
    """
    command = [sys.executable, "-m", MODULE]
    command += ["--lambda-mode", lambda_mode] if lambda_mode else []
    command += ["--wait-scale", str(wait_scale)] if wait_scale is not None else []
    env = {**os.environ, **SANDBOX_ENV}
    env.pop("AWS_ENDPOINT_URL", None)
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    try:
        line = _first_line(server, start_timeout)
        if not line.startswith(READY_LINE):
            raise RuntimeError(f"moto server ({' '.join(command)}) did not start within {start_timeout} s: {line!r}")
        yield line.removeprefix(READY_LINE).strip()
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The process's first line on stdout, or an empty string when it exits or ``timeout`` passes first."""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            return ""
    return process.stdout.readline()


def _post_config(endpoint: str, config: dict[str, object]) -> None:
    request = urllib.request.Request(
        f"{endpoint}/moto-api/config",
        data=json.dumps(config).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


def main(argv: list[str] | None = None) -> None:
    """Serve until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m clm_sandbox.moto_server", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--lambda-mode", choices=lambda_invoke.MODES, default=None, help="how Lambda handlers run")
    parser.add_argument("--wait-scale", type=float, default=None, help="factor for Wait states and Retry intervals")
    args = parser.parse_args(argv)
    for name, value in SANDBOX_ENV.items():
        os.environ.setdefault(name, value)
    lambda_invoke.set_mode(args.lambda_mode)
    wait_scale.set_factor(args.wait_scale)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with moto_server(args.port) as endpoint:
        print(f"{READY_LINE}{endpoint}", flush=True)
        stop.wait()


if __name__ == "__main__":
    main()
