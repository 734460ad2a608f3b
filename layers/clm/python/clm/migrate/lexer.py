"""Lexer of Go's text/template: text, comments and actions (`{{ ... }}` with `-` trim markers) split into tokens.

Follows https://pkg.go.dev/text/template: `{{- ` and ` -}}` trim the text beside them, comments are
`{{/* ... */}}` (trim markers allowed around them), and actions may span lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clm.migrate.errors import MigrateError

KEYWORDS = frozenset(
    {"if", "else", "end", "range", "with", "define", "template", "block", "break", "continue", "nil", "true", "false"}
)

_NUMBER = re.compile(r"[+-]?(0[xXbBoO][0-9a-fA-F_]+|\d[\d_]*(\.\d*)?([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FIELDS = re.compile(r"(\.[A-Za-z_][A-Za-z0-9_]*)+")
_STRING = re.compile(r'"(\\.|[^"\\\n])*"')
_RAW = re.compile(r"`[^`]*`")
_CHAR = re.compile(r"'(\\.|[^'\\\n])+'")
_SPACE = re.compile(r"[ \t\r\n]+")


@dataclass(frozen=True)
class Token:
    """One token inside an action: `kind` is one of ident, keyword, field, var, dot, string, raw, char, number,
    ( ) | := = , and `spaced` says whether white space came before it (a field right after `)` or a variable
    is a chain on it)."""

    kind: str
    text: str
    line: int
    spaced: bool


@dataclass(frozen=True)
class Chunk:
    """A piece of a template: text, a comment or an action, with its position in the source."""

    kind: str  # "text", "comment" or "action"
    text: str  # the text; the comment's inner text; the action's source between the delimiters
    line: int
    start: int
    end: int
    trim_left: bool = False
    trim_right: bool = False
    tokens: tuple[Token, ...] = ()


def chunks(source: str, file: str) -> list[Chunk]:
    """Split `source` into text, comment and action chunks (text is left untrimmed: trimming is the output's)."""
    result: list[Chunk] = []
    position, line = 0, 1
    while position < len(source):
        start = source.find("{{", position)
        if start < 0:
            result.append(Chunk("text", source[position:], line, position, len(source)))
            break
        if start > position:
            result.append(Chunk("text", source[position:start], line, position, start))
            line += source.count("\n", position, start)
        chunk = _action(source, start, line, file)
        result.append(chunk)
        line += source.count("\n", chunk.start, chunk.end)
        position = chunk.end
    return result


def _action(source: str, start: int, line: int, file: str) -> Chunk:
    inner = start + 2
    trim_left = source.startswith("- ", inner) or source.startswith(("-\t", "-\n", "-\r"), inner)
    if trim_left:
        inner += 2
    comment = re.compile(r"[ \t\r\n]*/\*").match(source, inner)
    if comment:
        close = source.find("*/", comment.end())
        if close < 0:
            raise MigrateError("unclosed comment", file, line)
        after = re.compile(r"([ \t\r\n]+-)?}}").match(source, close + 2)
        if not after:
            raise MigrateError("comment ends before closing delimiter", file, line)
        text = source[comment.end() : close]
        return Chunk("comment", text, line, start, after.end(), trim_left, bool(after.group(1)))
    tokens, position = _tokens(source, inner, line, file)
    trim_right = source.startswith("-}}", position)
    end = position + (3 if trim_right else 2)
    return Chunk("action", source[inner:position], line, start, end, trim_left, trim_right, tuple(tokens))


def _tokens(source: str, position: int, line: int, file: str) -> tuple[list[Token], int]:
    tokens: list[Token] = []
    spaced = True
    depth = 0
    while True:
        if position >= len(source):
            raise MigrateError("unclosed action", file, line)
        space = _SPACE.match(source, position)
        if space:
            line += space.group().count("\n")
            position = space.end()
            spaced = True
            if source.startswith("-}}", position) and depth == 0:
                return tokens, position
            continue
        if source.startswith("}}", position):
            if depth:
                raise MigrateError("unclosed left parenthesis", file, line)
            return tokens, position
        kind, text = _token(source, position, file, line)
        if kind == "(":
            depth += 1
        elif kind == ")":
            depth -= 1
            if depth < 0:
                raise MigrateError("unexpected right parenthesis", file, line)
        tokens.append(Token(kind, text, line, spaced))
        line += text.count("\n")
        position += len(text)
        spaced = False


def _token(source: str, position: int, file: str, line: int) -> tuple[str, str]:
    char = source[position]
    quoted = {"`": ("raw", _RAW), '"': ("string", _STRING), "'": ("char", _CHAR)}.get(char)
    if quoted:
        match = quoted[1].match(source, position)
        if match:
            return quoted[0], match.group()
        raise MigrateError(f"unterminated quoted string: {source[position : position + 20]!r}", file, line)
    if source.startswith(":=", position):
        return ":=", ":="
    if char in "()|=,":
        return char, char
    if char == "$":
        name = _IDENT.match(source, position + 1)
        fields = _FIELDS.match(source, position + 1 + (len(name.group()) if name else 0))
        return "var", "$" + (name.group() if name else "") + (fields.group() if fields else "")
    if char == ".":
        fields = _FIELDS.match(source, position)
        if fields:
            return "field", fields.group()
        number = _NUMBER.match(source, position)
        if number and number.group() != ".":
            return "number", number.group()
        return "dot", "."
    number = _NUMBER.match(source, position)
    if number and (char.isdigit() or (char in "+-" and number.end() > position + 1)):
        return "number", number.group()
    ident = _IDENT.match(source, position)
    if ident:
        word = ident.group()
        return ("keyword" if word in KEYWORDS else "ident"), word
    raise MigrateError(f"unexpected {char!r} in action", file, line)
