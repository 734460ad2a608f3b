"""A timer heap: keyed actions run at monotonic deadlines on one background thread."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Hashable

log = logging.getLogger(__name__)


class TimerHeap:
    """Run callables at ``time.monotonic()`` deadlines, in deadline order, on one thread.

    Scheduling a key that is already pending replaces it; an action that raises is logged and
    the thread carries on.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._heap: list[tuple[float, int, Hashable]] = []
        self._pending: dict[Hashable, tuple[int, float, Callable[[], None]]] = {}
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def schedule(self, key: Hashable, at: float, action: Callable[[], None]) -> None:
        """Run ``action`` at monotonic time ``at`` (at once when past), replacing a pending ``key``."""
        with self._cond:
            seq = next(self._seq)
            self._pending[key] = (seq, at, action)
            heapq.heappush(self._heap, (at, seq, key))
            self._cond.notify()

    def cancel(self, key: Hashable) -> None:
        """Forget the pending action of ``key``, if any."""
        with self._cond:
            self._pending.pop(key, None)

    def start(self) -> None:
        """Start the thread."""
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop and join the thread; pending actions are dropped. Idempotent."""
        with self._cond:
            self._stopping = True
            self._pending.clear()
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()

    def _next_due(self) -> Callable[[], None] | None:
        """Wait for the next due action (None when stopping); called with the condition held."""
        while not self._stopping:
            while self._heap and self._pending.get(self._heap[0][2], (None,))[0] != self._heap[0][1]:
                heapq.heappop(self._heap)  # cancelled or replaced
            if not self._heap:
                self._cond.wait()
                continue
            at, _, key = self._heap[0]
            delay = at - time.monotonic()
            if delay > 0:
                self._cond.wait(delay)
                continue
            heapq.heappop(self._heap)
            return self._pending.pop(key)[2]
        return None

    def _run(self) -> None:
        while True:
            with self._cond:
                action = self._next_due()
            if action is None:
                return
            try:
                action()
            except Exception:
                log.exception("%s: a timed action failed", self._name)
