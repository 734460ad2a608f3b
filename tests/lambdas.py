"""Load the Lambda handlers of lambdas/ the way the Lambda runtime does (by file), for direct calls in tests."""

from __future__ import annotations

import importlib.util
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

LAMBDAS = Path(__file__).parents[1] / "lambdas"


def load_handler_module(function: str) -> ModuleType:
    """lambdas/<function>/handler.py as a fresh module."""
    path = LAMBDAS / function / "handler.py"
    spec = importlib.util.spec_from_file_location(f"lambda_{function}_{uuid.uuid4().hex}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class FakeContext:
    """The attributes of Lambda's context object that powertools reads."""

    function_name: str = "clm-test"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:eu-central-1:123456789012:function:clm-test"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return 60_000
