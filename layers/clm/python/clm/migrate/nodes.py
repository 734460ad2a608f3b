"""The syntax tree of a Go template, as text/template/parse has it (positions kept for the report)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Tag:
    """One `{{ ... }}` of a template: its trim markers, line and source span."""

    left: bool
    right: bool
    line: int
    start: int
    end: int


# Operands of a command.
@dataclass(frozen=True)
class Field:
    """`.A.B` (on dot); an empty `names` is dot itself."""

    names: tuple[str, ...]


@dataclass(frozen=True)
class Var:
    """`$x.A.B`; `$` alone is the name ``."""

    name: str
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ident:
    """A function name."""

    name: str


@dataclass(frozen=True)
class Literal:
    """A string, number, boolean or nil, with its Python value and line."""

    value: object
    line: int = 0


@dataclass(frozen=True)
class Chain:
    """`(pipeline).A.B`."""

    pipe: Pipe
    names: tuple[str, ...] = ()


Operand = Field | Var | Ident | Literal | Chain


@dataclass(frozen=True)
class Command:
    """`f a b` or a single operand."""

    args: tuple[Operand, ...]
    line: int


@dataclass(frozen=True)
class Pipe:
    """`$x := cmd | cmd ...`: declared (or assigned, `=`) variables and the commands."""

    decl: tuple[str, ...]
    assign: bool
    cmds: tuple[Command, ...]
    line: int


# Statements.
@dataclass
class Text:
    text: str
    line: int


@dataclass
class Comment:
    tag: Tag
    text: str


@dataclass
class Action:
    """`{{ pipeline }}`: output, or a variable declaration or assignment."""

    tag: Tag
    pipe: Pipe


@dataclass
class Branch:
    """`if`/`else if`/`else`, `range`/`else`, `with`/`else`: the tag, its pipeline (None for else), the body."""

    tag: Tag
    pipe: Pipe | None
    body: list[Node] = field(default_factory=list)
    keyword: str = "if"


@dataclass
class Control:
    """if, range or with, up to its `end` tag."""

    kind: str
    branches: list[Branch]
    end: Tag


@dataclass
class Define:
    """`define "name"` ... `end` (or `block "name" pipeline`, which is a define used where it stands)."""

    tag: Tag
    name: str
    body: list[Node]
    end: Tag
    pipe: Pipe | None = None  # block only
    block: bool = False


@dataclass
class Template:
    """`template "name" pipeline`."""

    tag: Tag
    name: str
    pipe: Pipe | None


@dataclass
class LoopControl:
    """`break` or `continue`."""

    tag: Tag
    keyword: str


Node = Text | Comment | Action | Control | Define | Template | LoopControl
