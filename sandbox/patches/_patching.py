"""Replace an attribute of a class or module once, remembering what was there (what makes install() idempotent)."""

from __future__ import annotations

import functools
from typing import Any

_ORIGINALS: dict[tuple[Any, str], Any] = {}


def replace(owner: Any, name: str, replacement: Any) -> Any:
    """Set ``owner.<name>`` to ``replacement`` unless done before; returns the original (raw, as in ``vars``).

    The original is None when ``owner`` itself had no such attribute (it may inherit one).
    """
    key = (owner, name)
    if key not in _ORIGINALS:
        _ORIGINALS[key] = vars(owner).get(name)
        setattr(owner, name, replacement)
    return _ORIGINALS[key]


def original(owner: Any, name: str) -> Any:
    """What ``owner.<name>`` was before :func:`replace`."""
    return _ORIGINALS[(owner, name)]


def serialize(owner: Any, name: str, lock: Any) -> None:
    """Replace ``owner.<name>`` (a method) with one that holds ``lock`` while the original runs (idempotent)."""
    method = getattr(owner, name)

    @functools.wraps(method)
    def held(self: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            return original(owner, name)(self, *args, **kwargs)

    replace(owner, name, held)
