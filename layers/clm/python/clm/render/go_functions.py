"""Go's semantics where Jinja2's differ, for templates that `clm migrate` translated from Go templates
(clm.migrate.functions has the table): `printf` with Go's verbs, `sprint`/`sprintln` (fmt.Sprint/Sprintln),
`go_str` (how Go prints a value), `go_index` (text/template's `index`), `go_items` (what `range` iterates).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

VERB = re.compile(r"%([-+# 0]*)(\[\d+\])?(\d+|\*)?(?:\.(\d*|\*))?(\[\d+\])?(.?)", re.DOTALL)
_GO_TYPES = {str: "string", int: "int", bool: "bool", float: "float64", list: "[]interface {}"}
_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _float(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 64), as %v prints: shortest digits, exponent form below 1e-4 or
    from 1e6 (`1e+06`, `1.5e-05`)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    from decimal import Decimal  # only for floats, which CLM's templates hardly print

    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits)) or "0"
    point = len(text) + int(exponent)  # position of the decimal point in the digits
    if value == 0:
        return "-0" if sign else "0"
    if point - 1 < -4 or point - 1 >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{'-' if sign else ''}{mantissa}e{point - 1:+03d}"
    if point <= 0:
        body = "0." + "0" * -point + text
    elif point >= len(text):
        body = text + "0" * (point - len(text))
    else:
        body = text[:point] + "." + text[point:]
    return ("-" if sign else "") + body


def go_str(value: Any) -> str:
    """A value as Go's `{{ . }}` and `%v` print it: `true`, `<nil>`, `[a b]`, `map[k:v]`."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, list | tuple):
        return "[" + " ".join(map(go_str, value)) + "]"
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{go_str(k)}:{go_str(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def go_quote(text: str, ascii_only: bool = False) -> str:
    """strconv.Quote (and QuoteToASCII): a Go double-quoted string literal."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif (ascii_only and code > 0x7E) or not char.isprintable():
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _type_name(value: Any) -> str:
    return _GO_TYPES.get(type(value), "map[string]interface {}" if isinstance(value, Mapping) else "string")


def _bad(verb: str, value: Any) -> str:
    return f"%!{verb}(<nil>)" if value is None else f"%!{verb}({_type_name(value)}={go_str(value)})"


def _pad(text: str, flags: str, width: int | None, numeric: bool) -> str:
    if width is None or len(text) >= width:
        return text
    if "-" in flags:
        return text + " " * (width - len(text))
    if "0" in flags:
        sign = text[0] if numeric and text[:1] in "+-" else ""
        return sign + "0" * (width - len(text)) + text[len(sign) :]
    return " " * (width - len(text)) + text


def _integer(verb: str, value: int, flags: str, precision: int | None) -> str:
    digits = {"d": "d", "x": "x", "X": "X", "o": "o", "b": "b"}[verb]
    text = format(abs(value), digits)
    if precision is not None:
        text = text.rjust(precision, "0")
    if "#" in flags and verb in "xXob":
        text = {"x": "0x", "X": "0X", "o": "0", "b": "0b"}[verb] + text
    sign = "-" if value < 0 else "+" if "+" in flags else " " if " " in flags else ""
    return sign + text


def _format(verb: str, value: Any, flags: str, precision: int | None) -> tuple[str, bool]:
    """(text, numeric) for one verb and value, or Go's `%!verb(type=value)`."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if verb == "v" or (verb == "s" and isinstance(value, str | list | tuple | Mapping)):
        text = go_str(value)
        return (text[:precision] if precision is not None and isinstance(value, str) else text), False
    if verb == "q" and isinstance(value, str):
        return go_quote(value[:precision] if precision is not None else value, "+" in flags), False
    if verb == "q" and is_int:
        return "'" + go_quote(chr(value), "+" in flags)[1:-1].replace("'", "\\'").replace('\\"', '"') + "'", False
    if verb in "xX" and isinstance(value, str):
        return value.encode().hex() if verb == "x" else value.encode().hex().upper(), False
    if verb in "dxXob" and is_int:
        return _integer(verb, value, flags, precision), True
    if verb == "c" and is_int:
        return chr(value), False
    if verb == "t" and isinstance(value, bool):
        return go_str(value), False
    if verb in "eEfFgG" and isinstance(value, float):
        if verb in "gG" and precision is None:
            text = _float(value)
        else:
            text = format(value, f"{'+' if '+' in flags else ''}.{6 if precision is None else precision}{verb}")
        return text, True
    return _bad(verb, value), False


def printf(template: str, *args: Any) -> str:
    """fmt.Sprintf with Go's verbs (%v %s %d %q %x %X %o %b %c %t %e %f %g, flags `-+# 0`, width, precision,
    `%[n]` argument indexes), `%!verb(type=value)` for a wrong type and Go's MISSING/EXTRA notes."""
    out: list[str] = []
    position, arg, used = 0, 0, False
    for match in VERB.finditer(template):
        out.append(template[position : match.start()])
        position = match.end()
        flags, index_before, width, precision, index_after, verb = match.groups()
        if verb == "%" and not (flags or width or precision):
            out.append("%")
            continue
        index = index_before or index_after
        if index:
            arg, used = int(index[1:-1]) - 1, True
        widths = []
        for part in (width, precision):
            if part == "*":
                widths.append(args[arg] if arg < len(args) else 0)
                arg += 1
            else:
                widths.append(int(part) if part else (0 if part == "" else None))
        if not verb:
            out.append("%!(NOVERB)")
            continue
        if arg >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        text, numeric = _format(verb, args[arg], flags, widths[1])
        out.append(_pad(text, flags, widths[0], numeric))
        arg += 1
    out.append(template[position:])
    if arg < len(args) and not used:
        extra = ", ".join("<nil>" if a is None else f"{_type_name(a)}={go_str(a)}" for a in args[arg:])
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


def sprint(*args: Any) -> str:
    """fmt.Sprint (`print`): operands printed as Go does, a space between two that are not strings."""
    out = []
    for index, value in enumerate(args):
        if index and not isinstance(value, str) and not isinstance(args[index - 1], str):
            out.append(" ")
        out.append(go_str(value))
    return "".join(out)


def sprintln(*args: Any) -> str:
    """fmt.Sprintln (`println`): operands separated by spaces, then a newline."""
    return " ".join(map(go_str, args)) + "\n"


def go_index(value: Any, *keys: Any) -> Any:
    """text/template's `index`: a map's missing key gives nil (Go's zero value), a list index out of range fails."""
    for key in keys:
        if isinstance(value, Mapping):
            value = value.get(key)
        elif isinstance(value, list | tuple | str):
            if not isinstance(key, int) or isinstance(key, bool) or not 0 <= key < len(value):
                raise IndexError(f"index out of range: {key}")
            value = value.encode()[key] if isinstance(value, str) else value[key]
        else:
            raise TypeError(f"can't index item of type {_type_name(value)}")
    return value


def go_items(value: Any) -> list[tuple[Any, Any]]:
    """What `range` gives: (index, item) of a list, (key, value) of a map in key order, (i, i) up to an int."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [(key, value[key]) for key in sorted(value)]
    if isinstance(value, int) and not isinstance(value, bool):
        return [(i, i) for i in range(value)]
    if isinstance(value, list | tuple):
        return list(enumerate(value))
    raise TypeError(f"range can't iterate over {go_str(value)}")


def untranslated(message: str) -> str:
    """Fails the rendering: what `clm migrate` could not translate was reached."""
    raise ValueError(f"clm migrate could not translate this part of the template: {message}")


GO_FUNCTIONS = {
    "printf": printf,
    "sprint": sprint,
    "sprintln": sprintln,
    "go_str": go_str,
    "go_index": go_index,
    "go_items": go_items,
    "untranslated": untranslated,
}
