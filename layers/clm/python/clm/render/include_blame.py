"""Which included template a rendered document's YAML error lies in: a stack or manifest that is one `include`
(worker-spot's stack is worker-default's) must name the included file at fault, not its includer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from clm.errors import RenderError

if TYPE_CHECKING:
    from clm.render.environment import TemplateEnvironment


def blame_include(
    env: TemplateEnvironment,
    file: str,
    body: str,
    line: int | None,
    context: dict[str, Any],
    parses: Callable[[str], bool],
) -> tuple[str, int | None] | None:
    """The template `file` includes that holds the fault of its rendering `body`, and the line in it: one whose
    own rendering does not parse either and, found verbatim in `body`, spans the error's rendered `line` (any, if
    the error has none). None when no include explains it."""
    for name in env.includes(file):
        try:
            text = env.render(name, context)
        except RenderError:
            continue
        start = body.find(text) if text.strip() else -1
        if start < 0:
            continue
        first = body.count("\n", 0, start) + 1
        if parses(text) or (line is not None and not first <= line <= first + text.count("\n")):
            continue  # sound alone, or the error lies elsewhere: the includer placed it wrong, or is at fault
        inner = None if line is None else line - first + 1
        return blame_include(env, name, text, inner, context, parses) or (name, inner)
    return None
