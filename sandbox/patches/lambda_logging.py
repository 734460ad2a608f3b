"""Each in-process Lambda call keeps its own powertools log keys, as a container's process does on AWS.

powertools' ``Logger`` instances of one service share a Python logger, so its handler's formatter and that
formatter's keys (``log_format``). In-process, every container is a thread of one process: one call's
``clear_state`` and ``append_keys`` replaced another's keys (its lines carried the other call's cluster and step),
and a call adding keys while another formatted a line failed that call ("RuntimeError: dictionary changed size
during iteration", a racing provision run in a suite). Here ``log_format`` is per thread: a thread starts from
the keys the formatter was built with (in the thread that built it).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from clm_sandbox.patches._patching import replace

_local = threading.local()


def install() -> None:
    """Make the powertools formatter's keys per thread (idempotent)."""
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    replace(LambdaPowertoolsFormatter, "log_format", property(_keys, _set_keys))


def _threads_keys() -> weakref.WeakKeyDictionary:
    if not hasattr(_local, "keys"):
        _local.keys = weakref.WeakKeyDictionary()
    return _local.keys


def _keys(formatter: Any) -> dict[str, Any]:
    """This thread's keys of `formatter`: at first, a copy of those it was built with."""
    keys = _threads_keys()
    if formatter not in keys:
        keys[formatter] = dict(formatter.__dict__.get("_built_log_format", {}))
    return keys[formatter]


def _set_keys(formatter: Any, value: dict[str, Any]) -> None:
    formatter.__dict__.setdefault("_built_log_format", value)  # the constructor goes on filling it
    _threads_keys()[formatter] = value
