"""Step Functions definitions parse in several threads at once, as each execution's does on AWS.

moto 5.2.5's ASL preprocessor keeps its query-language scopes in a list shared by all its instances (a class
attribute): two executions parsing at once (in-process, threads) popped each other's scopes, one parser failed
with an IndexError in its thread, and its execution stayed RUNNING with no state for ever (ci15). Each preprocessor
now keeps its own list.
"""

from __future__ import annotations

from typing import Any

from clm_sandbox.patches._patching import original, replace


def install() -> None:
    """Give every preprocessor created from now on its own scope list (idempotent)."""
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    replace(Preprocessor, "__init__", _init)


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    self._query_language_per_scope = []
    init = original(Preprocessor, "__init__")
    if init is None:  # the class defines none: object's (through its bases)
        super(Preprocessor, self).__init__(*args, **kwargs)
    else:
        init(self, *args, **kwargs)
