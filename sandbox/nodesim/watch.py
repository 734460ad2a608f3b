"""A list-then-watch loop over the pods bound to any node, that survives errors and stops at once."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from clm_sandbox.nodesim.kube import REQUEST_TIMEOUT

log = logging.getLogger(__name__)

BOUND_PODS = "spec.nodeName!="
WATCH_SECONDS = 240  # the server ends each watch after this; the loop resumes from the last version
RETRY_SECONDS = 1.0

PodHandler = Callable[[str, dict[str, Any]], None]  # (ADDED | MODIFIED | DELETED, pod)
ResyncHandler = Callable[[list[dict[str, Any]]], None]  # every bound pod, after a (re)list


class _Expired(Exception):
    """The watch's resource version is too old (410 Gone): list again."""


class PodWatcher:
    """Calls ``on_resync`` with a full list of bound pods, then ``on_event`` for every change.

    Runs on its own thread; any error is logged and the loop lists again after a second. The
    events are raw API dicts (no model deserialization: this is on the latency path).
    """

    def __init__(self, api_client: client.ApiClient, on_event: PodHandler, on_resync: ResyncHandler) -> None:
        self._core = client.CoreV1Api(api_client)
        self._on_event = on_event
        self._on_resync = on_resync
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._response: Any = None
        self._thread: threading.Thread | None = None

    def start(self, name: str) -> None:
        """Start the watch thread."""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the loop, cutting an open watch connection, and join the thread. Idempotent."""
        with self._lock:
            self._stopping.set()
            if self._response is not None:
                _shut_down(self._response)
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                version = self._relist()
                while not self._stopping.is_set():
                    version = self._watch(version)
            except _Expired:
                log.debug("pod watch expired: listing again")
            except Exception:
                if self._stopping.is_set():
                    return
                log.exception("pod watch failed: listing again in %.0f s", RETRY_SECONDS)
                self._stopping.wait(RETRY_SECONDS)

    def _relist(self) -> str:
        response = self._core.list_pod_for_all_namespaces(
            field_selector=BOUND_PODS, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
        )
        listing = json.loads(response.data)
        self._on_resync(listing["items"])
        return str(listing["metadata"]["resourceVersion"])

    def _watch(self, version: str) -> str:
        """Follow one watch request from ``version``; return the version to resume from."""
        response = self._core.list_pod_for_all_namespaces(
            field_selector=BOUND_PODS,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_SECONDS,
            watch=True,
            _preload_content=False,
            _request_timeout=(REQUEST_TIMEOUT, WATCH_SECONDS + REQUEST_TIMEOUT),
        )
        with self._lock:
            if self._stopping.is_set():
                response.close()
                return version
            self._response = response
        try:
            for line in iter_resp_lines(response):
                if self._stopping.is_set():
                    break
                if not line:
                    continue
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        raise _Expired
                    raise RuntimeError(f"pod watch error {obj.get('code')}: {obj.get('message')}")
                version = obj["metadata"]["resourceVersion"]
                if kind != "BOOKMARK":
                    self._on_event(kind, obj)
        finally:
            with self._lock:
                self._response = None
            response.close()  # a half-read stream must not go back to the pool
            response.release_conn()
        return version


def _shut_down(response: Any) -> None:
    """Unblock a thread reading ``response`` by shutting its socket down."""
    sock = getattr(getattr(response, "connection", None), "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            log.debug("shutting the watch socket down failed", exc_info=True)
