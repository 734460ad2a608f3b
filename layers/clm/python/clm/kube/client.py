"""KubeClient: JSON requests to one cluster's API server, typed errors, bounded retries, watches.

Objects are plain dicts as the API serves them (no model classes: faster and lighter to import).
The credentials live inside the transport; this class never shows them (see `__repr__`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import yaml

from clm.kube.errors import KubeApiError, KubeAuthError
from clm.kube.transport import (
    JSON,
    RawResponse,
    Stream,
    Transport,
    TransportFailure,
    kubeconfig_transport,
    token_transport,
)
from clm.yamlutil import safe_load

if TYPE_CHECKING:
    from collections.abc import Callable

    from clm.kube.discovery import Discovery

log = logging.getLogger(__name__)

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
REQUEST_TIMEOUT = 30.0
RETRIES = 3
_RETRY_BASE = 0.25
_MAX_RETRY_AFTER = 2.0


def _decode(data: bytes) -> dict[str, Any]:
    try:
        decoded = json.loads(data) if data else {}
    except ValueError:
        return {"message": data[:200].decode(errors="replace")}
    return decoded if isinstance(decoded, dict) else {"items": decoded}


class KubeClient:
    """One cluster's API server. Build with `from_token`, `from_kubeconfig` or `from_api_client`.

    `renew`, when set, gives a transport with fresh credentials: a request the server refuses with 401 is sent once
    more through it (a client kept across invocations outlives a rotated secret).
    """

    def __init__(self, transport: Transport, cluster_id: str | None = None):
        self.transport = transport
        self.cluster_id = cluster_id
        self.renew: Callable[[], Transport] | None = None
        self._renewing = threading.Lock()

    @classmethod
    def from_api_client(cls, api_client: Any, cluster_id: str | None = None) -> Self:
        """Wrap an existing `kubernetes.client.ApiClient`."""
        from clm.kube.transport import ApiClientTransport

        return cls(ApiClientTransport(api_client), cluster_id)

    @classmethod
    def from_token(
        cls, server: str, token: str | Callable[[], str], ca_data: bytes | None = None, cluster_id: str | None = None
    ) -> Self:
        """Bearer-token auth; `ca_data` is the PEM bundle (None: the system's trust store)."""
        return cls(token_transport(server, token, ca_data), cluster_id)

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | Path | dict[str, Any], context: str | None = None, cluster_id: str | None = None
    ) -> Self:
        """From a kubeconfig: a file path, or its parsed content."""
        if isinstance(kubeconfig, dict):
            parsed, source = kubeconfig, "the kubeconfig"
        else:
            source = str(kubeconfig)
            try:
                parsed = safe_load(Path(kubeconfig).read_text())
            except (OSError, yaml.YAMLError) as exc:
                raise KubeAuthError(f"kubeconfig {source} is unreadable: {type(exc).__name__}", cluster_id) from None
        if not isinstance(parsed, dict) or not parsed.get("clusters"):
            raise KubeAuthError(f"{source} is not a kubeconfig (no clusters)", cluster_id)
        try:
            return cls(kubeconfig_transport(parsed, context), cluster_id)
        except Exception as exc:  # the loader's errors (ConfigException, KeyError...) name no secret
            raise KubeAuthError(
                f"{source}: cannot use it: {type(exc).__name__}: {str(exc)[:200]}", cluster_id
            ) from None

    def __repr__(self) -> str:
        return f"KubeClient({self.transport.server!r}, cluster_id={self.cluster_id!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the connections."""
        self.transport.close()

    @cached_property
    def discovery(self) -> Discovery:
        """The server's resources, asked once per client and refreshed on demand."""
        from clm.kube.discovery import Discovery

        return Discovery(self)

    def _error(self, method: str, path: str, response: RawResponse) -> KubeApiError | KubeAuthError:
        if response.status == 401:
            return KubeAuthError(f"{self.transport.server} refused the credentials (401 Unauthorized)", self.cluster_id)
        body = _decode(response.data)
        reason = str(body.get("message") or body.get("reason") or "")
        return KubeApiError(method, path, response.status, reason, self.cluster_id, body)

    def request(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        """Send one request and return the decoded JSON body; `options` as for `exchange`."""
        return self.exchange(method, path, **options)[1]

    def exchange(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float = REQUEST_TIMEOUT,
        retries: int = RETRIES,
    ) -> tuple[int, dict[str, Any]]:
        """Send one request; return the HTTP status and the decoded JSON body.

        Raises KubeApiError for any non-2xx status (KubeAuthError for 401). Transient failures
        (network, 429, 5xx) are retried up to `retries` times with a short backoff.
        """
        params = [
            (k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (query or {}).items() if v is not None
        ]
        for attempt in range(retries + 1):
            error: KubeApiError | KubeAuthError
            try:
                response = self._send(method, path, params, content_type, body, timeout)
            except TransportFailure as exc:
                error = KubeApiError(method, path, 0, str(exc), self.cluster_id)
                delay = _RETRY_BASE * 2**attempt
            else:
                if 200 <= response.status < 300:
                    return response.status, _decode(response.data)
                error = self._error(method, path, response)
                retry_after = response.headers.get("retry-after", "")
                delay = min(float(retry_after), _MAX_RETRY_AFTER) if retry_after.isdigit() else _RETRY_BASE * 2**attempt
            if not isinstance(error, KubeApiError) or not error.transient or attempt == retries:
                raise error
            log.info("retrying %s %s after %s (attempt %d)", method, path, error.status, attempt + 1)
            time.sleep(delay)
        raise AssertionError("unreachable")

    def _send(
        self, method: str, path: str, params: list[tuple[str, str]], content_type: str, body: Any, timeout: float
    ) -> RawResponse:
        """One request; after a 401, once more with renewed credentials when the client can renew them."""
        transport = self.transport
        response = transport.send(method, path, params, content_type, body, timeout)
        if response.status != 401 or self.renew is None:
            return response
        with self._renewing:  # evictions run in parallel: one renewal for all the refused
            if self.transport is transport:
                log.info("%s refused the kept credentials; connecting again", transport.server)
                self.transport = self.renew()  # the old one is left to the garbage collector: another thread may be
                # mid-request on it, and closing a pooled connection under it fails that request
        return self.transport.send(method, path, params, content_type, body, timeout)

    def get(self, path: str, query: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """GET an object; None when it does not exist."""
        try:
            return self.request("GET", path, query=query)
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise

    def watch(self, path: str, query: dict[str, Any], timeout: float) -> WatchStream:
        """Open a watch on a collection (`resourceVersion` in `query`); ends after `timeout` seconds."""
        params = [
            (k, str(v))
            for k, v in {
                **query,
                "watch": "true",
                "allowWatchBookmarks": "true",
                "timeoutSeconds": max(1, int(timeout + 0.999)),
            }.items()
        ]
        try:
            opened = self.transport.stream(path, params, timeout + 5.0)
        except TransportFailure as exc:
            raise KubeApiError("GET", path, 0, str(exc), self.cluster_id) from None
        if isinstance(opened, RawResponse):
            raise self._error("WATCH", path, opened)
        return WatchStream(opened)


class WatchStream:
    """The events of one watch: dicts with `type` and `object`; `close` stops it from any thread."""

    def __init__(self, stream: Stream):
        self._stream = stream

    def events(self) -> Iterator[dict[str, Any]]:
        """Each event as it arrives; ends when the server ends the watch, `close` is called, or a line is not JSON
        (a stream closed under its reader can yield a garbled last line: the caller lists again)."""
        try:
            for line in self._stream.lines():
                if line.strip():
                    yield json.loads(line)
        except (TransportFailure, ValueError):
            return

    def close(self) -> None:
        """Stop the watch."""
        self._stream.close()
