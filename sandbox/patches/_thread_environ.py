"""Environment variables for one thread: ``os.environ`` with a per-thread overlay.

An in-process Lambda call sees its function's variables; every other thread (the test, the node simulator,
other executions) keeps seeing the process's own environment, which nobody mutates meanwhile. Setting the
variables on ``os.environ`` itself for the call made other threads that iterate it (as every boto3 client
creation does) fail with KeyError when a variable vanished under them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

_local = threading.local()
_DELETED = None


def _overlay() -> dict[str, str | None] | None:
    return getattr(_local, "overlay", None)


class _OverlaidEnviron(os._Environ):  # type: ignore[misc,name-defined]  # os.environ's own class
    """``os._Environ`` consulting the calling thread's overlay first; writes inside an overlay stay in it."""

    def __getitem__(self, key: str) -> str:
        overlay = _overlay()
        if overlay is not None and key in overlay:
            value = overlay[key]
            if value is _DELETED:
                raise KeyError(key)
            return value
        return super().__getitem__(key)

    def __setitem__(self, key: str, value: str) -> None:
        overlay = _overlay()
        if overlay is None:
            super().__setitem__(key, value)
        else:
            overlay[self.decodekey(self.encodekey(key))] = self.decodevalue(self.encodevalue(value))

    def __delitem__(self, key: str) -> None:
        overlay = _overlay()
        if overlay is None:
            super().__delitem__(key)
        elif key not in self:
            raise KeyError(key)
        else:
            overlay[key] = _DELETED

    def __iter__(self) -> Iterator[str]:
        overlay = _overlay() or {}
        base = [self.decodekey(key) for key in list(self._data)]  # a snapshot: other threads may write
        yield from (key for key in base if overlay.get(key, "") is not _DELETED)
        yield from (key for key, value in overlay.items() if value is not _DELETED and key not in base)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def install() -> None:
    """Give ``os.environ`` per-thread overlays (idempotent; the object stays the same for everyone holding it)."""
    if not isinstance(os.environ, _OverlaidEnviron):
        os.environ.__class__ = _OverlaidEnviron


@contextmanager
def thread_environment(values: Mapping[str, str]) -> Iterator[None]:
    """Within the block, this thread (only) sees ``values`` over the process environment."""
    install()
    previous = _overlay()
    _local.overlay = {**(previous or {}), **values}
    try:
        yield
    finally:
        _local.overlay = previous
