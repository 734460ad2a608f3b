"""HTTP to the API server through the official client's ApiClient (TLS, auth, connection pool).

`KubeClient` talks JSON through a `Transport`; this is the real one. Unit tests give recorded
responses through the same interface. The kubernetes package is imported only when a transport is
built (its import costs most of a second), never when `clm.kube` is imported.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

JSON = "application/json"


@dataclass(frozen=True)
class RawResponse:
    """Status, headers (lower-case names) and body bytes of one response."""

    status: int
    headers: dict[str, str]
    data: bytes


class TransportFailure(Exception):
    """The server was not reached or the connection broke; the message never holds credentials."""


class Stream(Protocol):
    """The lines of a streaming response (a watch); `close` may be called from another thread."""

    def lines(self) -> Iterator[str]:
        """Each line of the body as it arrives."""
        ...

    def close(self) -> None:
        """Stop the stream; a thread blocked in `lines` returns."""
        ...


class Transport(Protocol):
    """What `KubeClient` needs from HTTP."""

    server: str

    def send(
        self, method: str, path: str, query: list[tuple[str, str]], content_type: str, body: Any, timeout: float
    ) -> RawResponse:
        """One request; any status comes back, network failures raise TransportFailure."""
        ...

    def stream(self, path: str, query: list[tuple[str, str]], timeout: float) -> Stream | RawResponse:
        """A GET whose body is read as it arrives; an error status comes back as a RawResponse."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class _UrllibStream:
    def __init__(self, response: Any):
        self._response = response

    def lines(self) -> Iterator[str]:
        from kubernetes.watch.watch import iter_resp_lines

        try:
            yield from iter_resp_lines(self._response)
        except Exception as exc:  # a closed or broken connection ends the stream
            raise TransportFailure(f"watch stream ended: {type(exc).__name__}") from None

    def close(self) -> None:
        with contextlib.suppress(OSError):  # its socket already shut (the server ended the watch meanwhile)
            self._response.shutdown()
        self._response.release_conn()


class ApiClientTransport:
    """A Transport over a `kubernetes.client.ApiClient`."""

    def __init__(self, api_client: Any):
        self.api_client = api_client
        self.server = api_client.configuration.host

    def __repr__(self) -> str:
        return f"ApiClientTransport({self.server})"

    def _call(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        content_type: str,
        body: Any,
        timeout: float | tuple[float, float],
    ) -> Any:
        import urllib3
        from kubernetes.client.exceptions import ApiException

        try:
            return self.api_client.call_api(
                path,
                method,
                query_params=query,
                body=body,
                auth_settings=["BearerToken"],
                header_params={"Content-Type": content_type, "Accept": JSON},
                _preload_content=False,
                _request_timeout=timeout,
            )
        except ApiException as exc:
            if not exc.status:  # the client's wrapping of TLS failures
                raise TransportFailure(f"{self.server}: {str(exc.reason).splitlines()[0]}") from None
            body_bytes = exc.body.encode() if isinstance(exc.body, str) else exc.body or b""
            headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
            return RawResponse(exc.status, headers, body_bytes)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportFailure(f"{self.server}: {type(exc).__name__}: {exc}") from None

    def send(
        self, method: str, path: str, query: list[tuple[str, str]], content_type: str, body: Any, timeout: float
    ) -> RawResponse:
        """One request through the ApiClient's pool."""
        response = self._call(method, path, query, content_type, body, timeout)
        if isinstance(response, RawResponse):
            return response
        return RawResponse(response.status, {k.lower(): v for k, v in response.headers.items()}, response.data)

    def stream(self, path: str, query: list[tuple[str, str]], timeout: float) -> Stream | RawResponse:
        """A streaming GET (connect timeout 10 s, read timeout `timeout`)."""
        response = self._call("GET", path, query, JSON, None, (10.0, timeout))
        return response if isinstance(response, RawResponse) else _UrllibStream(response)

    def close(self) -> None:
        """Close the ApiClient's pools."""
        self.api_client.close()


@functools.cache
def _private_directory() -> str:
    """A directory this process made (mode 0700, a random name): no other local user can put a file in it.
    Removed when the process exits."""
    path = tempfile.mkdtemp(prefix="clm-kube-ca-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


_ca_files: dict[str, str] = {}  # sha256 of a CA bundle -> the file this process wrote it to
_ca_files_lock = threading.Lock()


def _ca_file(ca_data: bytes) -> str:
    """The path of a file holding the CA bundle (the client wants a path): written by this process into its
    private directory (a new file, mode 0600), once per bundle; no file it did not write is ever read."""
    digest = hashlib.sha256(ca_data).hexdigest()
    with _ca_files_lock:
        if digest not in _ca_files:
            fd, path = tempfile.mkstemp(dir=_private_directory(), suffix=".pem")
            with os.fdopen(fd, "wb") as handle:
                handle.write(ca_data)
            _ca_files[digest] = path
        return _ca_files[digest]


def token_transport(server: str, token: str | Callable[[], str], ca_data: bytes | None) -> ApiClientTransport:
    """A transport with bearer-token auth; a callable token is asked before every request (it caches)."""
    from kubernetes.client import ApiClient, Configuration

    configuration = Configuration()
    configuration.host = server.rstrip("/")
    if ca_data:
        configuration.ssl_ca_cert = _ca_file(ca_data)

    def set_token(config: Any) -> None:
        config.api_key["BearerToken"] = "Bearer " + (token() if callable(token) else token)

    set_token(configuration)
    if callable(token):
        configuration.refresh_api_key_hook = set_token
    return ApiClientTransport(ApiClient(configuration=configuration))


def kubeconfig_transport(kubeconfig: dict[str, Any], context: str | None = None) -> ApiClientTransport:
    """A transport from a parsed kubeconfig (any auth the official client supports)."""
    from kubernetes import config

    return ApiClientTransport(config.new_client_from_config_dict(kubeconfig, context=context))
