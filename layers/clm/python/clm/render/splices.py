"""The render-time check that registry values spliced raw into YAML stay data.

Every registry value a template outputs (`{{ ... }}`, see clm.render.origins) that holds a character other than
letters, digits and `_ . / = + @ -` (or a colon between them) is wrapped in invisible markers (Unicode
noncharacters) with its origin and template position. When the whole file is rendered, each marked value is
checked where it landed (after includes, macros and `{% set %}` blocks) against the YAML around it, then the
markers are removed. `base64` checks the text it encodes the same way (user data is a document of its own).
A value is not data:

- nowhere: control characters, or a line break (except inside a block scalar, each new line indented at least as
  much as the line it starts on);
- in a double-quoted scalar: `"` or `\\`; in a single-quoted one: `'`; in a comment: nothing more;
- in a plain scalar: ` #` (a comment), `: ` or a final `:` (a mapping), a YAML indicator where the scalar starts
  (`- ? : , [ ] { } # & * ! | > ' " % @` and a backquote: a sequence, flow collection, tag, anchor, alias, block
  scalar, quoted scalar), `---`/`...` at the start of a line, and in a flow collection `, [ ] { }`.

The YAML around a value is read from its line (quotes, flow brackets, comments) and, for block scalars, from the
less indented line above. Limits: a quoted scalar or flow collection spanning lines is read as plain text.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

from clm.errors import RenderError
from clm.render.origins import INERT, RegistryStr, is_decrypted

OPEN, SEP, CLOSE = "\ufdd0", "\ufdd1", "\ufdd2"
_MARKED = re.compile(f"{OPEN}(\\d+){SEP}(.*?){CLOSE}", re.DOTALL)
_MARKS = re.compile(f"{OPEN}\\d+{SEP}|{CLOSE}")
_FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufdd0-\ufdef\ufffe\uffff]")
_BLOCK_HEADER = re.compile(r"(^|[\s:-])[|>][-+0-9]*\s*(#.*)?\Z")
_START_INDICATORS = "#,[]{}&*!|>'\"%@`"
PLAIN, DOUBLE, SINGLE, COMMENT = "plain", "double-quoted", "single-quoted", "comment"


@dataclass(frozen=True)
class Splice:
    """A registry value a template output: where it came from, and the template line that output it."""

    origin: str
    file: str
    line: int | None


def strip_marks(text: Any) -> Any:
    """`text` without splice markers (for encoders and hashes: they must see the value itself)."""
    return _MARKS.sub("", text) if isinstance(text, str) and OPEN in text else text


def _template_position() -> tuple[str, int | None]:
    frame = sys._getframe(2)
    while frame is not None:
        template = frame.f_globals.get("__jinja_template__")
        if template is not None:
            return template.name or "", template.get_corresponding_lineno(frame.f_lineno)
        frame = frame.f_back
    return "", None


class SpliceRecorder:
    """Marks registry values at output (`finalize`, Jinja's hook) and checks them in the rendered text."""

    def __init__(self) -> None:
        self.splices: list[Splice] = []

    def finalize(self, value: Any) -> Any:
        """Jinja's finalize: a registry value that is not inert comes out marked."""
        kind = type(value)
        if kind is str or kind is int:
            return value
        if kind is RegistryStr:
            if INERT.fullmatch(value):
                return value
            origin = value.origin
        elif kind is list or kind is tuple or kind is dict or dataclass_like(value):
            origin = f"the text of a {kind.__name__} holding registry values"
        else:
            return value
        file, line = _template_position()
        self.splices.append(Splice(origin, file, line))
        return f"{OPEN}{len(self.splices) - 1}{SEP}{strip_marks(str(value))}{CLOSE}"

    def check(self, text: str, file: str, cluster_id: str | None) -> str:
        """`text` without markers; RenderError naming the origin, file and line of a value that is not data."""
        if OPEN not in text:
            return text
        parts, spans, position, length = [], [], 0, 0
        for match in _MARKED.finditer(text):
            parts.append(text[position : match.start()])
            length += match.start() - position
            value = match.group(2)
            spans.append((length, length + len(value), int(match.group(1))))
            parts.append(value)
            length += len(value)
            position = match.end()
        parts.append(text[position:])
        clean = "".join(parts)
        for start, end, index in spans:
            problem = splice_problem(clean, start, end)
            if problem:
                splice = self.splices[index]
                raise RenderError(
                    f"{_named(splice.origin, clean[start:end])} is not data where the template splices it raw "
                    f"({problem}); "
                    "splice it as `{{ value | yaml }}` (or `| json`), or correct the value",
                    splice.file or file,
                    splice.line,
                    cluster_id,
                )
        return clean


def _named(origin: str, value: str) -> str:
    """What an error shows of a spliced value: where it came from, and its text unless it is a decrypted item's."""
    if is_decrypted(origin):
        return f"{origin} (its value is not shown)"
    return f"{origin} = {value if len(value) <= 80 else value[:77] + '...'!r}"


def dataclass_like(value: Any) -> bool:
    """Whether `value` is one of the model's objects (its text shows registry values)."""
    return hasattr(value, "__dataclass_fields__")


def splice_problem(text: str, start: int, end: int) -> str | None:
    """Why `text[start:end]` would be YAML syntax rather than data where it stands, or None."""
    value = text[start:end]
    forbidden = _FORBIDDEN.search(value)
    if forbidden:
        return f"control character {forbidden.group()!r}"
    line_start = text.rfind("\n", 0, start) + 1
    prefix = text[line_start:start]
    line_end = text.find("\n", end)
    after = text[end : len(text) if line_end < 0 else line_end]
    problem = _line_problem(value, prefix, after)
    if problem and _in_block_scalar(text, line_start):
        return _block_problem(value, text, line_start)
    return problem


def _line_problem(value: str, prefix: str, after: str) -> str | None:
    if "\n" in value:
        return "a line break"
    kind, depth, at_start = _line_state(prefix)
    if kind == COMMENT:
        return None
    if kind == DOUBLE:
        return next((f"{c!r} inside a double-quoted string" for c in value if c in '"\\'), None)
    if kind == SINGLE:
        return "' inside a single-quoted string" if "'" in value else None
    return _plain_problem(value.replace("\t", " "), prefix, after, depth, at_start)


def _plain_problem(value: str, prefix: str, after: str, depth: int, at_start: bool) -> str | None:
    stripped = value.lstrip(" ")
    if at_start and stripped:
        first, following = stripped[0], (stripped[1:2] or after[:1])
        if first in _START_INDICATORS or (first in "-?:" and following in ("", " ", "\t")):
            return f"{first!r} starts a YAML construct there"
        if not prefix and stripped.startswith(("---", "...")):
            return "a document marker"
    # Look one character either side: a value ending in ":" before a space also makes a mapping.
    probe = prefix[-1:] + value + (after[:1] or " ")
    offset = len(prefix[-1:])
    for pattern, meaning in ((r"\s#", "' #' starts a comment"), (r":\s", "': ' makes a mapping")):
        for match in re.finditer(pattern, probe):
            if match.start() < offset + len(value) and match.end() > offset:
                return meaning
    if depth and any(c in ",[]{}" for c in value):
        return "a flow indicator (, [ ] { }) inside a flow collection"
    return None


def _line_state(prefix: str) -> tuple[str, int, bool]:
    """(kind of text at the end of `prefix`, flow depth, whether a new scalar starts there)."""
    kind, depth, start, index = PLAIN, 0, True, 0
    while index < len(prefix):
        char, following = prefix[index], prefix[index + 1 : index + 2]
        if kind == DOUBLE:
            if char == "\\":
                index += 1
            elif char == '"':
                kind, start = PLAIN, False
        elif kind == SINGLE:
            if char == "'" and following == "'":
                index += 1
            elif char == "'":
                kind, start = PLAIN, False
        elif char in " \t":
            pass
        elif char == "#" and (index == 0 or prefix[index - 1] in " \t"):
            return COMMENT, depth, False
        elif start and char in "\"'":
            kind = DOUBLE if char == '"' else SINGLE
        elif char in "[{" and (start or depth):
            depth, start = depth + 1, True
        elif char in "]}" and depth:
            depth, start = depth - 1, False
        elif (char == "," and depth) or (char in "-?:" and following in (" ", "\t") and (start or char == ":")):
            start = True  # a flow entry, a sequence entry, a complex key, a mapping value
        elif char in "!&*" and start:
            while index + 1 < len(prefix) and prefix[index + 1] not in " \t":
                index += 1
            start = char != "*"
        else:
            start = False
        index += 1
    return kind, depth, start


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _in_block_scalar(text: str, line_start: int) -> bool:
    """Whether the line at `line_start` is inside a block scalar (`|` or `>`): the nearest less indented
    line above it ends with a block scalar header."""
    line_end = text.find("\n", line_start)
    indent = _indent(text[line_start : len(text) if line_end < 0 else line_end])
    end = line_start - 1
    while indent and end > 0:
        begin = text.rfind("\n", 0, end) + 1
        line = text[begin:end]
        if line.strip() and _indent(line) < indent:
            return bool(_BLOCK_HEADER.search(line))
        end = begin - 1
    return False


def _block_problem(value: str, text: str, line_start: int) -> str | None:
    indent = _indent(text[line_start:])
    for line in value.split("\n")[1:]:
        if line.strip() and _indent(line) < indent:
            return f"a line break followed by a line indented less than the block scalar's {indent} spaces"
    return None
