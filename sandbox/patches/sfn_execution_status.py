"""An execution reads RUNNING from its creation, as StartExecution's answer makes it on AWS.

moto 5.2.5's interpreter backend lists an execution as soon as it is created but gives it a status only when it
starts, so a ListExecutions or DescribeExecution from another thread in between fails with AttributeError ('NoneType'
object has no attribute 'value'): a poll of the executions while a roll hands over to its next execution did.
"""

from __future__ import annotations

from typing import Any

from clm_sandbox.patches._patching import original, replace


def install() -> None:
    """Wrap the interpreter's ``Execution.__init__`` (idempotent)."""
    from moto.stepfunctions.parser.backend.execution import Execution

    replace(Execution, "__init__", _init)


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.backend.execution import Execution

    original(Execution, "__init__")(self, *args, **kwargs)
    self.exec_status = ExecutionStatus.RUNNING
