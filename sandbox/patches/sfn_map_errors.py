"""A Map iteration that fails with one of Step Functions' own errors (``States.TaskFailed``, ``States.Timeout``)
fails the Map with that error, as in AWS, so that the Map's Catch sees it.

moto 5.2.5 wraps every iteration error in a custom error name, which refuses names starting with ``States.``:
the Map then dies with a ValueError (States.Runtime) instead. A child workflow run by
``states:startExecution.sync:2`` inside a Map fails with ``States.TaskFailed``, so CLM's pool loop meets this.
"""

from __future__ import annotations

from typing import Any

from clm_sandbox.patches._patching import original, replace

_MODULE = "moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iteration_worker"


def install() -> None:
    """Let the Map's iteration worker name States.* errors as such (idempotent)."""
    import importlib

    replace(importlib.import_module(_MODULE), "CustomErrorName", _error_name)


def _error_name(error_name: str) -> Any:
    import importlib

    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName

    if str(error_name).startswith("States."):
        return StatesErrorName.from_name(error_name)
    return original(importlib.import_module(_MODULE), "CustomErrorName")(error_name=error_name)
