"""Scale the waiting of moto's Step Functions interpreter down for tests: Wait states, Retry intervals and the
timeouts a definition sets.

``install()`` replaces the three places where the interpreter waits: ``WaitFunction._wait_interval`` (every
Wait state: Seconds, SecondsPath, Timestamp, TimestampPath and their JSONata forms), the sleep between Retry
attempts (the interval after IntervalSeconds, BackoffRate, MaxDelaySeconds and jitter) and a Task's
TimeoutSeconds/TimeoutSecondsPath (a waitForTaskToken task parked until then; the default, 99999999 s, is left
alone). All are multiplied by the factor: :func:`set_factor`, else ``$CLM_SANDBOX_WAIT_SCALE``, else 1 (real
time). A stopped execution still ends a Wait at once.
"""

from __future__ import annotations

import os
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from clm_sandbox.patches._patching import replace

FACTOR_ENV = "CLM_SANDBOX_WAIT_SCALE"

_factor: float | None = None


def install() -> None:
    """Make the interpreter's waits follow :func:`factor` (idempotent)."""
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import Timeout
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction

    replace(WaitFunction, "_wait_interval", _wait_interval)
    replace(retrier_decl, "time", types.SimpleNamespace(sleep=_retry_sleep))
    replace(Timeout, "_eval_body", _timeout_seconds)


def set_factor(value: float | None) -> None:
    """Set the factor for this process (e.g. 0.001: a 60 s Wait takes 60 ms); None falls back to the default."""
    global _factor  # noqa: PLW0603 - one setting per process, by design
    _factor = _checked(value, "set_factor()") if value is not None else None


def factor() -> float:
    """The factor in force: the one set, else ``$CLM_SANDBOX_WAIT_SCALE``, else 1."""
    if _factor is not None:
        return _factor
    return _checked(os.environ.get(FACTOR_ENV) or "1", f"${FACTOR_ENV}")


@contextmanager
def scaled(value: float) -> Iterator[None]:
    """Use ``value`` as the factor inside the block, then restore the previous setting."""
    previous = _factor
    set_factor(value)
    try:
        yield
    finally:
        set_factor(previous)


def _checked(value: float | str, source: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number >= 0:  # also rejects NaN
        raise ValueError(f"{source}: wait scale factor must be a number >= 0, got {value!r}")
    return number


def _wait_interval(self: Any, env: Any, wait_seconds: float) -> None:
    """Wait ``wait_seconds`` times the factor, or until the execution stops running."""
    deadline = time.monotonic() + max(wait_seconds, 0) * factor()
    while env.is_running():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        env.program_state_event.wait(remaining)


def _timeout_seconds(self: Any, env: Any) -> None:
    """Push the task's timeout, times the factor unless it is the default."""
    seconds = self._eval_seconds(env=env)
    env.stack.append(seconds if self.is_default_value() else seconds * factor())


def _retry_sleep(seconds: float) -> None:
    time.sleep(max(seconds, 0) * factor())
