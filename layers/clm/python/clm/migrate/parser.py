"""Parser of Go's text/template into clm.migrate.nodes: statements (if/range/with/define/template/block) and
pipelines (declarations, commands, parenthesised pipelines, field chains, literals)."""

from __future__ import annotations

import ast
import re

from clm.migrate.errors import MigrateError
from clm.migrate.lexer import Chunk, Token, chunks
from clm.migrate.nodes import (
    Action,
    Branch,
    Chain,
    Command,
    Comment,
    Control,
    Define,
    Field,
    Ident,
    Literal,
    LoopControl,
    Node,
    Operand,
    Pipe,
    Tag,
    Template,
    Text,
    Var,
)

_GO_OCTAL = re.compile(r"\\([0-7]{3})")


def parse(source: str, file: str) -> list[Node]:
    """The statements of a Go template; MigrateError (file and line) where Go's parser would refuse it."""
    parser = _Parser(chunks(source, file), file)
    body, stop = parser.statements(())
    if stop is not None:
        raise MigrateError(f"unexpected {{{{{stop[1].tokens[0].text}}}}}", file, stop[1].line)
    return body


def _tag(chunk: Chunk) -> Tag:
    return Tag(chunk.trim_left, chunk.trim_right, chunk.line, chunk.start, chunk.end)


class _Parser:
    def __init__(self, items: list[Chunk], file: str):
        self.items, self.file, self.index = items, file, 0

    def error(self, message: str, line: int) -> MigrateError:
        return MigrateError(message, self.file, line)

    def statements(
        self, stops: tuple[str, ...], opener: Chunk | None = None
    ) -> tuple[list[Node], tuple[str, Chunk] | None]:
        """Statements up to one whose first word is in `stops` (returned with its chunk, consumed); `opener` is
        the tag that needs it."""
        body: list[Node] = []
        while self.index < len(self.items):
            chunk = self.items[self.index]
            self.index += 1
            if chunk.kind == "text":
                body.append(Text(chunk.text, chunk.line))
                continue
            if chunk.kind == "comment":
                body.append(Comment(_tag(chunk), chunk.text))
                continue
            if not chunk.tokens:
                raise self.error("missing value for command", chunk.line)
            word = chunk.tokens[0].text if chunk.tokens[0].kind == "keyword" else ""
            if word in ("end", "else"):
                if word not in stops:
                    raise self.error(f"unexpected {{{{{word}}}}}", chunk.line)
                return body, (word, chunk)
            body.append(self.statement(word, chunk))
        if opener is not None:
            raise self.error(
                f"{{{{{opener.tokens[0].text}}}}} has no {{{{end}}}} (unexpected end of file)", opener.line
            )
        return body, None

    def statement(self, word: str, chunk: Chunk) -> Node:
        tokens = list(chunk.tokens[1:])
        if word in ("if", "range", "with"):
            return self.control(word, chunk, tokens)
        if word in ("define", "block"):
            name = self.name(tokens, chunk)
            pipe = self.pipe(tokens[1:], chunk.line) if word == "block" else None
            if word == "define" and len(tokens) > 1:
                raise self.error("unexpected tokens after define name", chunk.line)
            body, stop = self.statements(("end",), chunk)
            return Define(_tag(chunk), name, body, _tag(stop[1]), pipe, word == "block")  # type: ignore[index]
        if word == "template":
            name = self.name(tokens, chunk)
            return Template(_tag(chunk), name, self.pipe(tokens[1:], chunk.line) if len(tokens) > 1 else None)
        if word in ("break", "continue"):
            return LoopControl(_tag(chunk), word)
        return Action(_tag(chunk), self.pipe(list(chunk.tokens), chunk.line))

    def name(self, tokens: list[Token], chunk: Chunk) -> str:
        if not tokens or tokens[0].kind not in ("string", "raw"):
            raise self.error("expected a quoted template name", chunk.line)
        return str(_literal(tokens[0]))

    def control(self, word: str, chunk: Chunk, tokens: list[Token]) -> Control:
        branches = [Branch(_tag(chunk), self.pipe(tokens, chunk.line), keyword=word)]
        while True:
            branches[-1].body, stop = self.statements(("end", "else"), chunk)
            end_word, end_chunk = stop  # type: ignore[misc]
            if end_word == "end":
                return Control(word, branches, _tag(end_chunk))
            rest = list(end_chunk.tokens[1:])
            if branches[-1].pipe is None:
                raise self.error("{{else}} after {{else}}", end_chunk.line)
            if rest and rest[0].kind == "keyword" and rest[0].text in ("if", "with"):
                if rest[0].text != word or word == "range":
                    raise self.error(f"{{{{else {rest[0].text}}}}} inside {{{{{word}}}}}", end_chunk.line)
                branches.append(Branch(_tag(end_chunk), self.pipe(rest[1:], end_chunk.line), keyword=word))
            elif rest:
                raise self.error("unexpected tokens after {{else}}", end_chunk.line)
            else:
                branches.append(Branch(_tag(end_chunk), None, keyword="else"))

    def pipe(self, tokens: list[Token], line: int) -> Pipe:
        """A pipeline: optional `$x :=`/`$i, $x :=`/`$x =`, then commands separated by `|`."""
        decl: list[str] = []
        assign = False
        for count in (1, 2):
            marker = 2 * count - 1
            if (
                len(tokens) > marker
                and tokens[marker].kind in (":=", "=")
                and all(t.kind == "var" and "." not in t.text for t in tokens[0:marker:2])
                and all(t.kind == "," for t in tokens[1 : marker - 1 : 2])
            ):
                decl = [t.text[1:] for t in tokens[0:marker:2]]
                assign = tokens[marker].kind == "="
                tokens = tokens[marker + 1 :]
                break
        if not tokens:
            raise self.error("missing value in pipeline", line)
        cmds: list[Command] = []
        position = 0
        while True:
            args: list[Operand] = []
            cmd_line = tokens[position].line if position < len(tokens) else line
            while position < len(tokens) and tokens[position].kind not in ("|",):
                operand, position = self.operand(tokens, position)
                args.append(operand)
            if not args:
                raise self.error("missing command in pipeline", cmd_line)
            cmds.append(Command(tuple(args), cmd_line))
            if position >= len(tokens):
                return Pipe(tuple(decl), assign, tuple(cmds), line)
            position += 1

    def operand(self, tokens: list[Token], position: int) -> tuple[Operand, int]:
        token = tokens[position]
        kind = token.kind
        if kind == "(":
            depth, end = 0, position
            for end in range(position, len(tokens)):
                depth += {"(": 1, ")": -1}.get(tokens[end].kind, 0)
                if depth == 0:
                    break
            pipe = self.pipe(tokens[position + 1 : end], token.line)
            position = end + 1
            names: tuple[str, ...] = ()
            if position < len(tokens) and tokens[position].kind == "field" and not tokens[position].spaced:
                names = tuple(tokens[position].text[1:].split("."))
                position += 1
            return Chain(pipe, names), position
        if kind == "field":
            return Field(tuple(token.text[1:].split("."))), position + 1
        if kind == "dot":
            return Field(()), position + 1
        if kind == "var":
            name, *names = token.text[1:].split(".")
            return Var(name, tuple(names)), position + 1
        if kind == "ident":
            return Ident(token.text), position + 1
        if kind == "keyword" and token.text in ("nil", "true", "false"):
            return Literal({"nil": None, "true": True, "false": False}[token.text]), position + 1
        if kind in ("string", "raw", "char", "number"):
            return Literal(_literal(token), token.line), position + 1
        raise self.error(f"unexpected {token.text!r} in command", token.line)


def _literal(token: Token) -> object:
    """The Python value of a Go literal token."""
    text = token.text
    if token.kind == "raw":
        return text[1:-1]
    if token.kind in ("string", "char"):
        value = ast.literal_eval(_GO_OCTAL.sub(lambda m: f"\\x{int(m.group(1), 8):02x}", text))
        return ord(value) if token.kind == "char" else value
    digits = text.replace("_", "")
    sign, bare = (digits[0], digits[1:]) if digits[0] in "+-" else ("", digits)
    if re.fullmatch(r"0[0-7]+", bare):
        return int(sign + bare, 8)
    try:
        return int(digits, 0)
    except ValueError:
        return float(digits)
