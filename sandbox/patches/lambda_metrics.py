"""Each in-process Lambda container keeps its own powertools metrics, as a container's process does on AWS.

powertools' ``Metrics`` shares its metric set among all its instances (class attributes, for several instances in
one function's process). In-process, every function's containers are threads of one process, so one call's flush
emptied another's metrics mid-call, which then failed ("SchemaValidationError: Must contain at least one metric",
a roll that failed in a suite). Here each instance (a handler, built once per container) gets sets of its own.
"""

from __future__ import annotations

from typing import Any

from clm_sandbox.patches._patching import original, replace

_SHARED = ("_metrics", "_dimensions", "_metadata", "_default_dimensions")


def install() -> None:
    """Give every ``Metrics`` instance created from now on its own sets (idempotent)."""
    from aws_lambda_powertools.metrics.metrics import Metrics

    replace(Metrics, "__init__", _init)


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    from aws_lambda_powertools.metrics.metrics import Metrics

    for name in _SHARED:
        setattr(self, name, {})
    original(Metrics, "__init__")(self, *args, **kwargs)
