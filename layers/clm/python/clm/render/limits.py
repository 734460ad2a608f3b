"""Bounds on what a template makes while it renders, so that `{{ 'a' * 10**10 }}` is a RenderError naming the file
and line instead of a MemoryError (or the function killed for its memory) with no message.

Jinja's sandbox bounds `range` only. Here, in one rendering (a template with what it includes and hashes):
- no value may exceed MAX_VALUE characters (a container: its text, as `text_size` counts it), refused before it is
  made where its size follows from the arguments (clm.render.growth: `*`, `%`, `center`, `join`...), checked after
  for every other operator, filter, function and method result, and checked before a container becomes text;
- no integer a `*` or `**` makes may exceed MAX_INT_BITS bits;
- the values made add up to at most MAX_MADE, and the text written (output, and what set blocks, macros and filter
  blocks capture) to at most MAX_OUTPUT.
"""

from __future__ import annotations

import functools
import operator
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from jinja2.utils import Namespace

from clm.render.growth import Estimate, binop_size, int_bits
from clm.yaml_limits import MAX_DEPTH

MAX_VALUE = 4 * 2**20  # characters: 7x the largest template of Zalando's configuration (565 KB)
MAX_OUTPUT = 16 * 2**20
MAX_MADE = 64 * 2**20
MAX_INT_BITS = 4096
FLAT_REMEMBERED = 16  # sizes of the latest sequences `+` made, kept with them (clm.render.limits.Limits._flat)
BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "*": operator.mul,
    "**": operator.pow,
    "+": operator.add,
    "%": operator.mod,
}
_CONTAINERS = (list, tuple, dict, set, frozenset, Namespace)
_SIZED = (str, bytes, *_CONTAINERS)
_SCALARS = (str, bytes, int, float, type(None))  # immutable, holding nothing


class TooLarge(ValueError):
    """A template made, or was about to make, more than clm.render.limits allows."""


def _items(value: Any) -> Any:
    if isinstance(value, Namespace):
        value = value._Namespace__attrs  # its repr prints them
    if isinstance(value, dict):
        return [part for pair in value.items() for part in pair]
    return value


def text_size(value: Any, limit: int = MAX_VALUE) -> int:
    """About the characters of `str(value)`: a string's length; a container's items' sizes and 2 per item, an item
    it holds many times counted each time (computed once). Stops counting past `limit` (the result is then larger
    than `limit`); a container nested deeper than MAX_DEPTH is TooLarge."""
    memo: dict[int, int] = {}

    def size(item: Any, depth: int) -> int:
        if isinstance(item, str | bytes):
            return len(item)
        if isinstance(item, int) and not isinstance(item, bool):
            return item.bit_length() // 3 + 2
        if not isinstance(item, _CONTAINERS):
            return 16  # numbers, objects of CLM and Jinja: their text is bounded where they come from
        if id(item) in memo:
            return memo[id(item)]
        if depth >= MAX_DEPTH:
            raise TooLarge(f"a value nested deeper than {MAX_DEPTH} levels")
        memo[id(item)] = 2  # a container inside itself prints as [...]
        total = 2
        for part in _items(item):
            total += size(part, depth + 1) + 2
            if total > limit:
                break
        memo[id(item)] = total
        return total

    return size(value, 0)


def _describe(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value) if abs(value) < 10**30 else f"an integer of {int(value).bit_length():,} bits"
    unit = "character" if isinstance(value, str | bytes) else "item"
    count = len(value) if hasattr(value, "__len__") else 0
    return f"a {type(value).__name__} of {count:,} {unit}{'' if count == 1 else 's'}"


class Limits:
    """The counts of one rendering and the checks the template environment calls."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Start a rendering."""
        self._made = 0
        self._written = 0
        self._flat: OrderedDict[int, tuple[Any, int]] = OrderedDict()  # recent flat sequences made by `+`: sizes

    def _size(self, value: Any) -> int:
        known = self._flat.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        return text_size(value, MAX_VALUE)

    def forget(self, value: Any) -> None:
        """`value` may have changed (a method of it was called): its size is counted again when next asked."""
        self._flat.pop(id(value), None)

    def _concatenated(self, left: Any, right: Any, made: Any, size: int) -> None:
        """Remember the size of `made` = `left + right` when it holds no container (so only its own methods can
        change it, which `forget` it): a loop growing a list by `+` is then counted in linear time, not quadratic."""
        if not all(isinstance(item, _SCALARS) for item in right):
            return
        if self._flat.get(id(left), (None,))[0] is not left and not all(isinstance(i, _SCALARS) for i in left):
            return
        self._flat[id(made)] = (made, size)
        if len(self._flat) > FLAT_REMEMBERED:
            self._flat.popitem(last=False)

    def _refuse_over(self, what: str, size: int) -> None:
        if size > MAX_VALUE:
            raise TooLarge(
                f"{what} would make {size:,} characters or items; a template value may have at most {MAX_VALUE:,}"
            )

    def given(self, what: str, values: Any) -> None:
        """Refuse an operation given a container whose text is over MAX_VALUE (before it becomes text)."""
        for value in values:
            if isinstance(value, _CONTAINERS) and self._size(value) > MAX_VALUE:
                raise TooLarge(
                    f"{what} is given {_describe(value)} whose text is over {MAX_VALUE:,} characters,"
                    " the most a template value may have"
                )

    def made(self, what: str, value: Any, size: int | None = None) -> Any:
        """Check and count a value an operation made (its `size` when the operation knows it exactly); return it."""
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
            raise TooLarge(f"{what} made an integer of {value.bit_length():,} bits; at most {MAX_INT_BITS:,}")
        if isinstance(value, _SIZED):
            if size is None:
                size = len(value) if isinstance(value, str) else self._size(value)
            if size > MAX_VALUE:
                raise TooLarge(
                    f"{what} made more than {MAX_VALUE:,} characters or items, the most a template value may have"
                )
            self._made += size
            if self._made > MAX_MADE:
                raise TooLarge(f"the values this rendering made add up to more than {MAX_MADE:,} characters or items")
        return value

    def emit(self, text: str) -> str:
        """Count text the rendering writes (or captures); return it."""
        self._written += len(text)
        if self._written > MAX_OUTPUT:
            raise TooLarge(f"the rendering writes more than {MAX_OUTPUT:,} characters")
        return text

    def binop(self, symbol: str, left: Any, right: Any) -> Any:
        """`left <symbol> right`, refused before it is made when too large."""
        what = f"{_describe(left)} {symbol} {_describe(right)}"
        bits = int_bits(symbol, left, right)
        if bits > MAX_INT_BITS:
            raise TooLarge(f"{what} would make an integer of {bits:,} bits; at most {MAX_INT_BITS:,}")
        self.given(what, (left, right))
        size = binop_size(symbol, left, right, self._size)
        self._refuse_over(what, size)
        if symbol != "+" or type(left) not in (list, tuple) or type(right) is not type(left):
            return self.made(what, BINOPS[symbol](left, right))
        made = self.made(what, left + right, size)  # two lists' or tuples' items: `size` is exact
        self._concatenated(left, right, made, size)
        return made

    def call(
        self, what: str, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], estimate: Any
    ) -> Any:
        """`function(*args, **kwargs)` (generators read into lists first), refused before it is made when its
        `estimate` is too large, its result checked and counted."""
        for arg in args:
            if isinstance(arg, Iterator):
                args = tuple(list(arg) if isinstance(arg, Iterator) else arg for arg in args)
                break
        self.given(what, args)
        if kwargs:
            self.given(what, kwargs.values())
        if estimate is not None:
            try:
                size = estimate(*args, **kwargs)
            except (TypeError, ValueError, AttributeError, OverflowError):
                size = 0  # arguments the function refuses too, with its own message
            self._refuse_over(what, size)
        return self.made(what, function(*args, **kwargs))

    def guard(self, what: str, function: Callable[..., Any], estimate: Estimate | None) -> Callable[..., Any]:
        """`function` (a filter or global) whose calls go through `call` (Jinja's pass_* marks kept)."""

        @functools.wraps(function)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            return self.call(what, function, args, kwargs, estimate)

        return guarded
