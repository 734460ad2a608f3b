"""Pipelines of Go templates as Jinja2 expressions, with Go's meaning (see the table in clm.migrate.functions)."""

from __future__ import annotations

import itertools
import keyword
import re
from dataclasses import dataclass, field

from clm.migrate.functions import (
    ANY,
    ANY_LIST,
    BOOL,
    BUILTINS,
    INT,
    ROOT_NAMES,
    STR,
    STRUCT_FIELDS,
    VALUES,
    Type,
    function,
    model_fields,
    renderer_names,
    snake_case,
)
from clm.migrate.nodes import Chain, Command, Field, Ident, Literal, Operand, Pipe, Var
from clm.render.etcd import TAUPAGE_VALUES

# Precedence of what an expression's text is, loosest first.
OR, AND, NOT, COMPARE, CONCAT, FILTER, ATOM = range(1, 8)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DICT_NAMES = frozenset(dir(dict))
_OPERATORS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class Untranslatable(Exception):
    """A construct with no faithful Jinja2 translation; the message says why."""


@dataclass(frozen=True)
class Expr:
    """A translated expression: its Jinja text (None: the template's whole data, which has no name), type,
    precedence, and whether it is a plain path (no calls: cheap and safe to repeat)."""

    text: str | None
    type: Type
    prec: int = ATOM
    pure: bool = False

    def at(self, prec: int) -> str:
        """The text, parenthesised if it binds looser than `prec`."""
        if self.text is None:  # the template's data as a value: a record of what templates get
            return "dict(Cluster=cluster, NodePool=node_pool, Values=values)"
        return self.text if self.prec >= prec else f"({self.text})"


@dataclass
class Notes:
    """What a file's translation needs from the renderer that it lacks."""

    functions: set[str] = field(default_factory=set)
    fields: set[str] = field(default_factory=set)


class Scope:
    """Go's variables and dot in one block, and the Jinja names in use."""

    def __init__(self, parent: Scope | None, dot: Expr, loop: bool = False, root: Expr | None = None):
        self.parent, self.dot = parent, dot
        self.vars: dict[str, tuple[Expr, str, int]] = {}  # Go name -> (value, Jinja target, loop depth)
        self.loops = (parent.loops if parent else 0) + loop
        self.root: Expr = root or (parent.root if parent else dot)
        self.names: set[str] = set()

    def binding(self, name: str) -> tuple[Expr, str, int]:
        """A Go variable's (value, Jinja assignment target, loop depth of its declaration)."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name]
            scope = scope.parent
        raise Untranslatable(f"undefined variable ${name}")

    def lookup(self, name: str) -> Expr:
        return self.binding(name)[0]

    def taken(self, name: str) -> bool:
        """Whether a Jinja name is bound here or in an enclosing block."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return True
            scope = scope.parent
        return False

    def bind(self, name: str, value: Expr, target: str) -> None:
        self.vars[name] = (value, target, self.loops)


RESERVED = frozenset(
    "and or not in is if else true false none True False None loop self varargs kwargs caller "  # noqa: SIM905
    "cluster node_pool values range dict lipsum cycler joiner namespace".split()
)


class Expressions:
    """Translates pipelines; `notes` collects the functions and fields the renderer lacks."""

    def __init__(self) -> None:
        self.notes = Notes()
        self._known = renderer_names()

    def fresh(self, scope: Scope, wanted: str) -> str:
        """A Jinja name for a new variable: the Go name unless taken (a builtin, a function, one in use)."""
        base = wanted + "_" if keyword.iskeyword(wanted) else wanted if _IDENTIFIER.fullmatch(wanted) else "var"
        name, count = base, 1
        while name in RESERVED or name in self._known or scope.taken(name):
            count += 1
            name = f"{base}_{count}"
        scope.names.add(name)
        return name

    def pipe(self, pipe: Pipe, scope: Scope, truth: bool = False) -> Expr:
        """A pipeline's value (declarations are the caller's); `truth`: only its truth matters."""
        result: Expr | None = None
        for cmd in pipe.cmds:
            result = self.command(cmd, scope, result, truth)
        assert result is not None
        return result

    def command(self, cmd: Command, scope: Scope, piped: Expr | None, truth: bool) -> Expr:
        head, rest = cmd.args[0], cmd.args[1:]
        if isinstance(head, Ident):
            logical = truth and head.name in ("and", "or", "not")  # their operands' truth is all that matters
            args = [self.operand(arg, scope, logical) for arg in rest] + ([piped] if piped else [])
            return self.call(head.name, args, rest, scope, piped is not None, truth)
        if not (rest or piped):
            return self.operand(head, scope)
        if isinstance(head, Field | Var | Chain) and head.names:  # a method call: `.Values.Info.Fraction 0.9`
            args = [self.operand(arg, scope) for arg in rest] + ([piped] if piped else [])
            method = self.operand(head, scope)
            return Expr(f"{method.at(ATOM)}({', '.join(a.at(OR) for a in args)})", ANY)
        raise Untranslatable("arguments given to a value that is not a method")

    def operand(self, operand: Operand, scope: Scope, truth: bool = False) -> Expr:
        if isinstance(operand, Field):
            return self.fields(scope.dot, operand.names)
        if isinstance(operand, Var):
            return self.fields(scope.lookup(operand.name) if operand.name else scope.root, operand.names)
        if isinstance(operand, Chain):
            return self.fields(self.pipe(operand.pipe, scope, truth and not operand.names), operand.names)
        if isinstance(operand, Literal):
            return literal(operand.value)
        if isinstance(operand, Ident):
            return self.call(operand.name, [], (), scope, False, False)
        raise Untranslatable(f"unknown operand {operand!r}")

    def fields(self, base: Expr, names: tuple[str, ...]) -> Expr:
        """`.A.B` on `base`: struct fields in snake_case, map keys as they are."""
        for name in names:
            kind = base.type.kind
            if kind == "struct" and base.type.name == "root":
                if name not in ROOT_NAMES:
                    raise Untranslatable(f"`.{name}` is not a variable templates get (Cluster, NodePool, Values)")
                text = ROOT_NAMES[name] if base.text is None else f"{base.at(ATOM)}.{name}"  # a macro's data
                base = Expr(text, STRUCT_FIELDS["root"][name], pure=True)
            elif kind == "struct":
                jinja = snake_case(name)
                if jinja not in model_fields(base.type.name):
                    self.notes.fields.add(f"{base.type.name}.{jinja}")
                field_type = STRUCT_FIELDS[base.type.name].get(name, ANY)
                base = Expr(f"{base.at(ATOM)}.{jinja}", field_type, pure=base.pure)
            else:
                if base.type is VALUES and name in TAUPAGE_VALUES:
                    self.notes.fields.add(f"values.{name} (CLM's Taupage-era etcd value: not provided)")
                base = Expr(self.key(base, name), base.type.field(name), pure=base.pure)
        return base

    @staticmethod
    def key(base: Expr, name: str) -> str:
        if _IDENTIFIER.fullmatch(name) and name not in _DICT_NAMES:
            return f"{base.at(ATOM)}.{name}"
        return f"{base.at(ATOM)}[{literal(name).text}]"

    def call(
        self, name: str, args: list[Expr], operands: tuple[Operand, ...], scope: Scope, piped: bool, truth: bool
    ) -> Expr:
        if name in BUILTINS:
            return self.builtin(name, args, operands, truth)
        target = function(name)
        if target.name not in self._known:
            self.notes.functions.add(f"{target.name} (CLM's {name})")
        if piped and len(args) == 1 and target.name in self._known:
            from clm.render.functions import FUNCTIONS

            if target.name in FUNCTIONS:
                return Expr(f"{args[0].at(FILTER)} | {target.name}", target.returns, FILTER)
        return Expr(f"{target.name}({', '.join(a.at(OR) for a in args)})", target.returns)

    def builtin(self, name: str, args: list[Expr], operands: tuple[Operand, ...], truth: bool) -> Expr:
        count = len(args)
        if name in ("and", "or"):
            if not args:
                raise Untranslatable(f"{name} without arguments")
            level = AND if name == "and" else OR
            types = {a.type for a in args}
            return Expr(f" {name} ".join(a.at(level + 1) for a in args), types.pop() if len(types) == 1 else ANY, level)
        if name == "not" and count == 1:
            return Expr(f"not {args[0].at(CONCAT)}", BOOL, NOT)  # `not (a == b)`, parenthesised to read well
        if name == "eq" and count >= 2:
            if count == 2:
                return Expr(f"{args[0].at(CONCAT)} == {args[1].at(CONCAT)}", BOOL, COMPARE)
            choices = ", ".join(a.at(OR) for a in args[1:])
            return Expr(f"{args[0].at(CONCAT)} in ({choices})", BOOL, COMPARE)
        if name in _OPERATORS and count == 2:
            return Expr(f"{args[0].at(CONCAT)} {_OPERATORS[name]} {args[1].at(CONCAT)}", BOOL, COMPARE)
        if name == "len" and count == 1:
            return Expr(f"{args[0].at(FILTER)} | length", INT, FILTER)
        if name == "index" and count >= 1:
            return self.index(args[0], args[1:], truth)
        if name == "print" and args:
            return self.concat(args)
        if name == "printf" and args:
            return Expr(f"printf({', '.join(a.at(OR) for a in args)})", STR)
        if name == "println":
            return Expr(f"sprintln({', '.join(a.at(OR) for a in args)})", STR)
        if name == "dict":
            return self.dict(args, operands)
        if name == "list":
            return Expr(f"[{', '.join(a.at(OR) for a in args)}]", ANY_LIST)
        raise Untranslatable(f"Go's `{name}` with {count} argument(s) has no translation")

    def index(self, base: Expr, keys: list[Expr], truth: bool) -> Expr:
        for key in keys:
            kind = base.type.kind
            constant = key.pure and key.text is not None and key.text[:1] == '"'
            if kind == "map" and base.type.item == STR:
                default = "" if truth else ', ""'
                base = Expr(f"{base.at(ATOM)}.get({key.at(OR)}{default})", STR)
            elif kind == "list" and key.text is not None and key.text.isdigit():
                base = Expr(f"{base.at(ATOM)}[{key.text}]", base.type.item or ANY, pure=base.pure)
            elif kind == "record" and constant and key.text[1:-1] in dict(base.type.fields):  # type: ignore[index]
                base = Expr(self.key(base, key.text[1:-1]), base.type.field(key.text[1:-1]))  # type: ignore[index]
            else:
                base = Expr(f"go_index({base.at(OR)}, {key.at(OR)})", base.type.item or ANY)
        return base

    @staticmethod
    def concat(args: list[Expr]) -> Expr:
        """`print`: `~` where Go puts no space (a string between every two operands), else `sprint(...)`."""
        plain = all(a.type in (STR, INT, ANY) for a in args)
        strings = all(STR in (a.type, b.type) for a, b in itertools.pairwise(args))
        if len(args) == 1 and args[0].type == STR:
            return args[0]
        if plain and strings and len(args) > 1:
            return Expr(" ~ ".join(a.at(FILTER) for a in args), STR, CONCAT)
        return Expr(f"sprint({', '.join(a.at(OR) for a in args)})", STR)

    @staticmethod
    def dict(args: list[Expr], operands: tuple[Operand, ...]) -> Expr:
        """`dict "k" v ...` as `dict(k=v, ...)` (or `{"k-1": v}` for keys that are not names), lines kept."""
        keys = [o.value if isinstance(o, Literal) else None for o in operands[::2]]
        if not args or len(args) % 2 or not all(isinstance(k, str) for k in keys) or len(set(keys)) < len(keys):
            raise Untranslatable("dict needs string keys, each once, each with a value")
        names = all(_IDENTIFIER.fullmatch(str(k)) and not keyword.iskeyword(str(k)) for k in keys)
        pairs, previous = [], operands[0].line  # type: ignore[union-attr]
        for number, (key, value) in enumerate(zip(keys, args[1::2], strict=True)):
            line = operands[2 * number].line  # type: ignore[union-attr]
            pair = f"{key}={value.at(OR)}" if names else f"{literal(key).text}: {value.at(OR)}"
            pairs.append(("\n" * (line - previous) + "  " if line > previous else "") + pair)
            previous = line
        text = ", ".join(pairs).replace(", \n", ",\n")
        fields = tuple((str(k), v.type) for k, v in zip(keys, args[1::2], strict=True))
        return Expr(f"dict({text})" if names else "{" + text + "}", Type("record", ANY, fields=fields))


def literal(value: object) -> Expr:
    """A Go constant as a Jinja literal."""
    if isinstance(value, bool):
        return Expr("true" if value else "false", BOOL, pure=True)
    if value is None:
        return Expr("none", Type("nil"), pure=True)
    if isinstance(value, int | float):
        return Expr(repr(value), INT if isinstance(value, int) else Type("float"), pure=True)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    text = re.sub(
        r"[\x00-\x1f\x7f]", lambda m: {"\n": "\\n", "\t": "\\t"}.get(m.group(), f"\\x{ord(m.group()):02x}"), text
    )
    return Expr(f'"{text}"', STR, pure=True)
