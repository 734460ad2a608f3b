"""StartExecution without a name gets a fresh UUID, as in AWS, also when moto's ASL interpreter is on.

moto 5.2.5's interpreter backend names such an execution ``None``, so a second unnamed start of the same state
machine fails with ExecutionAlreadyExists (the plain backend already draws a UUID).
"""

from __future__ import annotations

import uuid
from typing import Any

from clm_sandbox.patches._patching import original, replace


def install() -> None:
    """Wrap the interpreter backend's ``start_execution`` (idempotent)."""
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    replace(StepFunctionsParserBackend, "start_execution", _start_execution)


def _start_execution(self: Any, state_machine_arn: str, name: str | None = None, *args: Any, **kwargs: Any) -> Any:
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    moto_start = original(StepFunctionsParserBackend, "start_execution")
    return moto_start(self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)
