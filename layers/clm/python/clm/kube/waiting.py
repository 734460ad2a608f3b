"""Wait, within a deadline, for the first relevant event on any of several watches (one thread each).

A watch starts at the resourceVersion of the list it follows, so nothing between list and watch is
missed. A watch that ends or reports an error (410: expired) also wakes the waiter: the caller lists
again. A watch that cannot be opened at all is logged and left out, so the wait falls back to its deadline.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clm.kube.errors import KubeError

if TYPE_CHECKING:
    from clm.kube.client import KubeClient, WatchStream

log = logging.getLogger(__name__)

Relevant = Callable[[str, dict[str, Any]], bool]
_JOIN_SECONDS = 1.0


@dataclass(frozen=True)
class WatchSpec:
    """Watch `path` (with `query`) from `resource_version`; `relevant(type, object)` picks the events that wake."""

    path: str
    resource_version: str
    relevant: Relevant
    query: tuple[tuple[str, str], ...] = ()


class _Watcher(threading.Thread):
    def __init__(
        self, kube: KubeClient, spec: WatchSpec, timeout: float, wake: queue.Queue[str], stop: threading.Event
    ):
        super().__init__(daemon=True, name=f"watch {spec.path}")
        self.kube, self.spec, self.timeout, self.wake, self.stop = kube, spec, timeout, wake, stop
        self.stream: WatchStream | None = None
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            stream = self.kube.watch(
                self.spec.path, {**dict(self.spec.query), "resourceVersion": self.spec.resource_version}, self.timeout
            )
        except KubeError as exc:  # no wake-up: a watch that cannot open must not turn the wait into a busy loop
            log.warning("cannot watch %s, waiting without it: %s", self.spec.path, exc.message)
            return
        with self.lock:
            self.stream = stream
        if self.stop.is_set():
            stream.close()
            return
        for event in stream.events():
            kind, obj = event.get("type", ""), event.get("object") or {}
            if kind == "ERROR" or (kind != "BOOKMARK" and self.spec.relevant(kind, obj)):
                self.wake.put(f"{kind} {obj.get('metadata', {}).get('name', '')}")
                return
        self.wake.put(f"watch {self.spec.path} ended")

    def close(self) -> None:
        with self.lock:
            if self.stream is not None:
                with contextlib.suppress(Exception):
                    self.stream.close()


def wait_for_event(
    kube: KubeClient, specs: list[WatchSpec], deadline: float, wake: queue.Queue[str] | None = None
) -> str | None:
    """Block until a relevant event on any watch, or a message on `wake` from the caller's own watchers (returns
    what woke it), or `deadline` (monotonic; returns None)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0 or not (specs or wake):  # nothing to watch: return, the caller ends its pass (no sleeping)
        return None
    wake = wake or queue.Queue()
    stop = threading.Event()
    watchers = [_Watcher(kube, spec, remaining, wake, stop) for spec in specs]
    for watcher in watchers:
        watcher.start()
    try:
        return wake.get(timeout=remaining)
    except queue.Empty:
        return None
    finally:
        stop.set()
        for watcher in watchers:
            watcher.close()
        for watcher in watchers:
            watcher.join(_JOIN_SECONDS)
