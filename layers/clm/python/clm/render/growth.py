"""How large a value an operation of a template makes, known before it is made (clm.render.limits refuses it).

Each estimate takes the operation's arguments and gives an upper bound of the characters (or items) of its
result, or of the bits of an integer. Only operations whose result can be far larger than their arguments need
one: a width or count (`center(10**10)`, `'a' * 10**10`, `'%*d'`), a separator or replacement repeated per item
(`join`, `replace`, `wordwrap`'s wrapstring), an exponent. The others make at most a few times what they are given.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Mapping
from typing import Any

from clm.render.go_functions import VERB as GO_VERB

Estimate = Callable[..., int]
# A text size: characters, counting a container's items as clm.render.limits.text_size does.
TextSize = Callable[[Any], int]

_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?[a-zA-Z%]")
_NUMBER = re.compile(r"\d+")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _star_values(args: Any) -> int:
    """The sum of the integers among format arguments (each could be a `*` width)."""
    values = args.values() if isinstance(args, Mapping) else args if isinstance(args, tuple | list) else (args,)
    return sum(abs(value) for value in values if _is_int(value))


def percent_size(fmt: str, args: Any, size: TextSize) -> int:
    """`fmt % args` (printf-style): the format, its widths and precisions, and the arguments' text."""
    total = len(fmt) + size(args)
    for width, precision in _PERCENT_SPEC.findall(fmt):
        for part in (width, precision):
            total += _star_values(args) if part == "*" else int(part or 0)
    return total


def format_size(fmt: str, args: tuple[Any, ...], kwargs: Mapping[str, Any], size: TextSize) -> int:
    """`fmt.format(*args, **kwargs)`: the format, the numbers in its specs (a nested field: any integer given),
    and the arguments' text."""
    total = len(fmt) + size(args) + size(dict(kwargs))
    for _, _, spec, _ in string.Formatter().parse(fmt):
        if spec:
            total += sum(int(number) for number in _NUMBER.findall(spec))
            total += _star_values((*args, *kwargs.values())) if "{" in spec else 0
    return total


def printf_size(size: TextSize, template: str, *args: Any) -> int:
    """Go's fmt.Sprintf (clm.render.go_functions.printf): as `%`, with Go's verbs; `%q` escapes at most 6x."""
    total = len(str(template)) + 6 * size(args)
    for match in GO_VERB.finditer(str(template)):
        for part in (match.group(3), match.group(4)):
            total += _star_values(args) if part == "*" else int(part or 0)
    return total


def binop_size(operator: str, left: Any, right: Any, size: TextSize) -> int:
    """The size of `left <operator> right` for `*`, `+` and `%` (the text or items made, 0 for numbers)."""
    if operator == "*":
        count, sequence = (left, right) if _is_int(left) else (right, left)
        if _is_int(count) and isinstance(sequence, str | bytes):
            return len(sequence) * max(count, 0)
        if _is_int(count) and isinstance(sequence, list | tuple):
            return (size(sequence) - 2) * max(count, 0) + 2  # the items repeated, in one pair of brackets
    elif operator == "+" and isinstance(left, str | bytes):
        return len(left) + size(right)
    elif operator == "+" and isinstance(left, list | tuple):
        return size(left) + size(right) - 2
    elif operator == "%" and isinstance(left, str):
        return percent_size(left, right, size)
    return 0


def int_bits(operator: str, left: Any, right: Any) -> int:
    """The bits of the integer `left * right` or `left ** right`, 0 when not both integers."""
    if not (_is_int(left) and _is_int(right)):
        return 0
    if operator == "*":
        return left.bit_length() + right.bit_length()
    if operator == "**" and right > 0 and abs(left) > 1:
        return math.ceil(right * math.log2(abs(left)))
    return 0


def _width(value: Any) -> int:
    """An indentation or width given as a number or as the text itself."""
    return len(value) if isinstance(value, str) else int(value or 0)


def _lines(text: Any) -> int:
    return str(text).count("\n") + 1


def _replace_size(text: Any, old: Any, new: Any, count: Any = None) -> int:
    text, old, new = str(text), str(old), str(new)
    found = len(text) + 1 if not old else text.count(old)
    if _is_int(count) and count >= 0:
        found = min(found, count)
    return len(text) + found * max(len(new) - len(old), 0)


def _join_size(size: TextSize, separator: Any, items: Any) -> int:
    return size(items) + len(str(separator)) * len(items)


def _translate_size(text: str, table: Any) -> int:
    longest = max((len(value) for value in table.values() if isinstance(value, str)), default=1)
    return len(text) * max(longest, 1) if isinstance(table, Mapping) else len(text)


def _wordwrap_size(
    _env: Any, s: Any, width: Any = 79, break_long_words: Any = True, wrapstring: Any = None, *_: Any
) -> int:
    """Jinja's do_wordwrap (its arguments): at most a break (`wrapstring`) per character."""
    return len(str(s)) * (1 + len(wrapstring or "\n"))


def _urlize_size(
    _ctx: Any,
    value: Any,
    trim_url_limit: Any = None,
    nofollow: Any = False,
    target: Any = None,
    rel: Any = None,
    *_: Any,
) -> int:
    """Jinja's do_urlize (its arguments): at most a link's markup per character."""
    return len(str(value)) * (20 + len(target or "") + len(rel or ""))


def _indexed_list_size(item_template: Any, length: int) -> int:
    """CLM's indexedList: `length` copies of the template, each `$` an index, and the commas."""
    text = str(item_template)
    return (len(text) + text.count("$") * len(str(length)) + 1) * max(int(length), 0)


def filter_estimates(size: TextSize) -> dict[str, Estimate]:
    """Jinja's filters (and CLM's functions as filters) that can make far more than they are given, by name."""
    return {
        "center": lambda value, width=80: max(len(str(value)), int(width)),
        "indent": lambda s, width=4, *_, **__: len(str(s)) + _lines(s) * _width(width),
        "wordwrap": _wordwrap_size,
        "format": lambda value, *args, **kwargs: percent_size(str(value), kwargs or args, size),
        "join": lambda _ctx, value, d="", attribute=None: _join_size(size, d, value),
        "replace": lambda _ctx, s, old, new, count=None: _replace_size(s, old, new, count),
        "tojson": lambda _ctx, value, indent=None: 6 * size(value) * (1 + _width(indent)),
        "urlize": _urlize_size,
        "batch": lambda value, linecount, fill_with=None: len(value) + int(linecount),
        "slice": lambda value, slices, fill_with=None: len(value) + int(slices),
        "sum": lambda _env, iterable, attribute=None, start=0: size(start) + size(iterable),
        "printf": lambda template, *args: printf_size(size, template, *args),
        "indexed_list": _indexed_list_size,
    }


def global_estimates(size: TextSize) -> dict[str, Estimate]:
    """CLM's global functions (and Jinja's lipsum) that can make far more than they are given, by name."""
    return {
        "indent": lambda spaces, text: len(str(text)) + _lines(text) * int(spaces),
        "join": lambda separator, items: _join_size(size, separator, items),
        "printf": lambda template, *args: printf_size(size, template, *args),
        "lipsum": lambda n=5, html=True, min=20, max=100: int(n) * (int(max) + 1) * 16,
        "indexed_list": _indexed_list_size,
    }


def method_estimate(method: Any, size: TextSize) -> Estimate | None:
    """The estimate of a `str` or `bytes` method that can make more than it is given, bound to its value."""
    value = getattr(method, "__self__", None)
    if not isinstance(value, str | bytes):
        return None
    name = getattr(method, "__name__", "")
    if name in ("center", "ljust", "rjust", "zfill"):
        return lambda width, *_: max(len(value), int(width))
    if name == "expandtabs":
        return lambda tabsize=8: len(value) + value.count("\t" if isinstance(value, str) else b"\t") * int(tabsize)
    if name == "join":
        return lambda items: _join_size(size, value, items)
    if name == "replace":
        return lambda old, new, count=-1: _replace_size(value, old, new, count)
    if name == "translate":
        return lambda table, *_: _translate_size(str(value), table)
    if name == "format" and isinstance(value, str):
        return lambda *args, **kwargs: format_size(value, args, kwargs, size)
    if name == "format_map" and isinstance(value, str):
        return lambda mapping: format_size(value, (), mapping, size)
    return None
