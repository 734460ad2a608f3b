"""Go templates to Jinja2 templates, statement by statement, keeping lines, trim markers and comments.

What has no faithful translation is left marked: a Jinja comment with the reason and the Go original, and an
`untranslated("file:line: reason")` call in its place, which fails the rendering if reached.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from clm.migrate.errors import MigrateError
from clm.migrate.expressions import FILTER, OR, Expr, Expressions, Notes, Scope, Untranslatable, literal
from clm.migrate.functions import ANY, ROOT, STR, Type
from clm.migrate.nodes import Action, Comment, Control, Define, LoopControl, Node, Pipe, Tag, Template, Text
from clm.migrate.parser import parse

_SPECIAL = re.compile(r"\{[%#]")
_CLOSE = re.compile(r"-?[%}#]\}$")
_GLOBALS = frozenset({"cluster", "node_pool", "values"})
_PRINTED_AS_GO = frozenset({"list", "map", "record", "nil", "float"})


@dataclass(frozen=True)
class Problem:
    """A construct left marked, with where and why."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


@dataclass
class Translation:
    """A translated template, what was left marked, and what the renderer lacks for it."""

    text: str
    problems: list[Problem] = field(default_factory=list)
    notes: Notes = field(default_factory=Notes)


def translate(source: str, file: str) -> Translation:
    """Translate one Go template; MigrateError (file, line) if Go would not parse it."""
    return _Translator(source, file).run()


class _Translator:
    def __init__(self, source: str, file: str):
        self.source, self.file = source, file
        self.exprs = Expressions()
        self.problems: list[Problem] = []
        self.defines: dict[str, Define] = {}
        self.macros: dict[str, str] = {}
        self.calls: dict[str, list[tuple[int, Type]]] = {}

    def run(self) -> Translation:
        nodes = parse(self.source, self.file)
        self.namespaced = _namespaced(nodes)
        root = Scope(None, Expr(None, ROOT, pure=True))
        for node in nodes:
            if isinstance(node, Define):
                if node.name in self.defines:
                    raise MigrateError(f"template {node.name!r} defined twice", self.file, node.tag.line)
                self.defines[node.name] = node
                self.macros[node.name] = self.exprs.fresh(root, re.sub(r"\W", "_", node.name))
        parts = [self.node(node, root) for node in nodes]
        defines = [(index, node) for index, node in enumerate(nodes) if isinstance(node, Define) and not node.block]
        bodies = {index: self.macro(node) for index, node in defines}  # records the calls made inside macros
        # Jinja macros exist from where they are defined: if one is used first, all go to the top, in order.
        hoist = any(position < node.tag.start for _, node in defines for position, _ in self.calls.get(node.name, []))
        hoisted = []
        for index, node in defines:
            name = self.macros[node.name]
            if hoist:
                hoisted.append(f"{{% macro {name}(data) %}}{bodies[index]}{{#\n#}}")
                parts[index] = self.moved(node)
            else:
                parts[index] = self.lines(self.tag(node.tag, f"macro {name}(data)"), node.tag) + bodies[index]
        return Translation("".join(hoisted + parts), self.problems, self.exprs.notes)

    # Building blocks.
    def tag(self, tag: Tag, body: str, delim: str = "%", left: bool | None = None, right: bool | None = None) -> str:
        """A Jinja tag with the Go tag's trim markers (or those given)."""
        left = tag.left if left is None else left
        right = tag.right if right is None else right
        close = {"{": "}}", "%": "%}", "#": "#}"}[delim]
        return f"{{{delim}{'-' if left else ''} {body} {'-' if right else ''}{close}"

    def lines(self, text: str, tag: Tag) -> str:
        """`text` with the line breaks the Go tag spanned (added before its last closing delimiter)."""
        missing = self.source.count("\n", tag.start, tag.end) - text.count("\n")
        if missing <= 0:
            return text
        close = _CLOSE.search(text)
        cut = close.start() if close else len(text)
        return text[:cut] + "\n" * missing + text[cut:]

    def expr(self, pipe: Pipe, scope: Scope, tag: Tag, truth: bool = False) -> tuple[Expr, str]:
        """The pipeline's expression and a marking comment ("" when translated)."""
        try:
            return self.exprs.pipe(pipe, scope, truth), ""
        except Untranslatable as exc:
            return self.mark(tag, str(exc))

    def mark(self, tag: Tag, reason: str) -> tuple[Expr, str]:
        self.problems.append(Problem(self.file, tag.line, reason))
        original = self.source[tag.start : tag.end].replace("#}", "# }")
        comment = f"{{#{'-' if tag.left else ''} clm migrate: cannot translate ({reason}): {original} #}}"
        call = f"untranslated({literal(f'{self.file}:{tag.line}: {reason}').text})"
        return Expr(call, ANY), comment

    def body(self, nodes: list[Node], scope: Scope) -> str:
        return "".join(self.node(node, scope) for node in nodes)

    def node(self, node: Node, scope: Scope) -> str:
        if isinstance(node, Text):
            return _SPECIAL.sub(lambda m: f'{{{{ "{m.group()}" }}}}', node.text)
        if isinstance(node, Comment):
            return self.tag(node.tag, node.text.strip().replace("#}", "# }"), "#")
        if isinstance(node, Action):
            return self.lines(self.action(node, scope), node.tag)
        if isinstance(node, Control):
            return getattr(self, f"control_{node.kind}")(node, scope)
        if isinstance(node, Template):
            return self.lines(self.template(node.tag, node.name, node.pipe, scope), node.tag)
        if isinstance(node, Define):
            if scope.parent is not None:
                raise MigrateError("define inside a block", self.file, node.tag.line)
            if node.block:
                opening = self.tag(node.tag, f"macro {self.macros[node.name]}(data)", right=False)
                try:  # the macro's argument type (template() marks the pipeline if it has no translation)
                    argument = self.exprs.pipe(node.pipe, scope).type  # type: ignore[arg-type]
                except Untranslatable:
                    argument = ANY
                self.calls.setdefault(node.name, []).append((node.tag.start, argument))
                macro = self.lines(opening, node.tag) + self.macro(node)
                return macro + self.template(node.end, node.name, node.pipe, scope, left=False)
            return ""  # filled in by run(), once every call's argument type is known
        if isinstance(node, LoopControl):
            expr, comment = self.mark(node.tag, f"{{{{{node.keyword}}}}} (Jinja has no loop controls here)")
            return comment + self.tag(node.tag, expr.at(OR), "{", left=False)
        raise AssertionError(node)

    # Statements.
    def action(self, node: Action, scope: Scope) -> str:
        pipe = node.pipe
        expr, comment = self.expr(pipe, scope, node.tag)
        left = False if comment else None
        if not pipe.decl:
            if expr.type.kind == "struct" and not comment:
                expr, comment = self.mark(node.tag, "printing a whole cluster, node pool or template data")
                left = False
            text = expr.at(OR)
            if expr.type.kind == "bool":
                text = f"{expr.at(FILTER)} | lower"
            elif expr.type.kind in _PRINTED_AS_GO:
                text = f"{expr.at(FILTER)} | go_str"
            return comment + self.tag(node.tag, text, "{", left)
        name = pipe.decl[-1]
        if pipe.assign:
            try:
                _, target, depth = scope.binding(name)
            except Untranslatable as exc:
                expr, comment = self.mark(node.tag, str(exc))
                return comment + self.tag(node.tag, expr.at(OR), "{", False)
            if depth < scope.loops and not target.endswith(".value"):
                expr, comment = self.mark(node.tag, f"${name} is declared outside the loop that assigns it")
            return comment + self.tag(node.tag, f"set {target} = {expr.at(OR)}", left=left)
        if expr.text is None or (expr.pure and expr.text in _GLOBALS):
            scope.bind(name, expr, expr.text or "")  # an alias: `$data := .` names what is already named
            return self.tag(node.tag, f"{self.source[node.tag.start + 2 : node.tag.end - 2].strip(' -')}", "#")
        jinja = self.exprs.fresh(scope, name)
        if id(node) in self.namespaced:
            scope.bind(name, Expr(f"{jinja}.value", expr.type, pure=True), f"{jinja}.value")
            return comment + self.tag(node.tag, f"set {jinja} = namespace(value={expr.at(OR)})", left=left)
        scope.bind(name, Expr(jinja, expr.type, pure=True), jinja)
        return comment + self.tag(node.tag, f"set {jinja} = {expr.at(OR)}", left=left)

    def control_if(self, node: Control, scope: Scope) -> str:
        out = []
        for number, branch in enumerate(node.branches):
            inner = Scope(scope, scope.dot)
            if branch.pipe is None:
                out.append(self.tag(branch.tag, "else"))
            else:
                head = self.condition(branch.pipe, inner, branch.tag, "if" if number == 0 else "elif")
                out.append(self.lines(head, branch.tag))
            out.append(self.body(branch.body, inner))
        return "".join(out) + self.tag(node.end, "endif")

    def condition(self, pipe: Pipe, scope: Scope, tag: Tag, keyword: str) -> str:
        expr, comment = self.expr(pipe, scope, tag, truth=True)
        if not pipe.decl:
            return comment + self.tag(tag, f"{keyword} {expr.at(OR)}", left=False if comment else None)
        if keyword == "elif":
            expr, comment = self.mark(tag, "a variable declared in {{else if}}")
            return comment + self.tag(tag, f"elif {expr.at(OR)}", left=False)
        jinja = self.exprs.fresh(scope, pipe.decl[-1])
        scope.bind(pipe.decl[-1], Expr(jinja, expr.type, pure=True), jinja)
        return self.setter(tag, jinja, expr, comment) + self.tag(tag, f"{keyword} {jinja}", left=False)

    def control_with(self, node: Control, scope: Scope) -> str:
        first = node.branches[0]
        always = False
        if len(node.branches) > 2 or (len(node.branches) == 2 and node.branches[1].pipe is not None):
            expr, comment = self.mark(first.tag, "{{else with}}")
            inner, head = Scope(scope, Expr(None, ANY)), comment + self.tag(first.tag, f"if {expr.at(OR)}", left=False)
        else:
            inner, head, always = self.with_head(first.pipe, scope, first.tag, len(node.branches) == 1)  # type: ignore[arg-type]
        out = [self.lines(head, first.tag), self.body(first.body, inner)]
        if always:  # a with on the template's data (or a struct) is always taken: kept as comments
            return "".join(out) + self.tag(node.end, "end with", "#")
        for branch in node.branches[1:]:
            out += [self.tag(branch.tag, "else"), self.body(branch.body, Scope(scope, scope.dot))]
        return "".join(out) + self.tag(node.end, "endif")

    def with_head(self, pipe: Pipe, scope: Scope, tag: Tag, alone: bool) -> tuple[Scope, str, bool]:
        """The scope inside a with, its opening tags, and whether it is always taken."""
        expr, comment = self.expr(pipe, scope, tag)
        name = pipe.decl[-1] if pipe.decl else ""
        struct = expr.type.kind == "struct" and not expr.type.nullable
        always = (expr.text is None or struct) and alone and not comment
        if always or (expr.pure and (not name or expr.text in _GLOBALS)):  # names what is already named
            inner = Scope(scope, expr)
            if name:
                inner.bind(name, expr, expr.text or "")
            if always:
                return inner, self.tag(tag, self.source[tag.start + 2 : tag.end - 2].strip(" -"), "#"), True
            return inner, comment + self.tag(tag, f"if {expr.at(OR)}", left=False if comment else None), False
        jinja = self.exprs.fresh(scope, name or "it")
        value = Expr(jinja, expr.type, pure=True)
        inner = Scope(scope, value)
        if name:
            inner.bind(name, value, jinja)
        return inner, self.setter(tag, jinja, expr, comment) + self.tag(tag, f"if {jinja}", left=False), False

    def setter(self, tag: Tag, jinja: str, expr: Expr, comment: str) -> str:
        """`{% set jinja = expr %}` before a tag that tests it, taking the Go tag's left trim marker."""
        return f"{comment}{{%{'-' if tag.left and not comment else ''} set {jinja} = {expr.at(OR)} %}}"

    def control_range(self, node: Control, scope: Scope) -> str:
        first = node.branches[0]
        pipe: Pipe = first.pipe  # type: ignore[assignment]
        expr, comment = self.expr(pipe, scope, first.tag)
        if expr.type.kind == "struct" and not comment:
            expr, comment = self.mark(first.tag, "range over a cluster, node pool or template data")
        inner = Scope(scope, scope.dot, loop=True)
        decl = list(pipe.decl)
        value_name = self.exprs.fresh(inner, decl[-1] if decl else "item")
        key_name = self.exprs.fresh(inner, decl[0]) if len(decl) == 2 else "_"
        kind, item = expr.type.kind, expr.type.item or ANY
        after = ""
        if kind == "list":
            head = f"for {value_name} in {expr.at(OR)}"
            if len(decl) == 2:
                after = f"set {key_name} = loop.index0"
        else:
            helper = "dictsort" if kind == "map" else "go_items"
            head = f"for {key_name}, {value_name} in {expr.at(FILTER)} | {helper}"
        inner.dot = Expr(value_name, item, pure=True)
        if len(decl) == 2:
            inner.bind(decl[0], Expr(key_name, STR if kind == "map" else ANY, pure=True), key_name)
        if decl:
            inner.bind(decl[-1], inner.dot, value_name)
        left = False if comment else None
        head_text = comment + self.tag(first.tag, head, left=left, right=False if after else None)
        if after:
            head_text += self.tag(first.tag, after, left=False)
        out = [self.lines(head_text, first.tag), self.body(first.body, inner)]
        for branch in node.branches[1:]:
            out += [self.tag(branch.tag, "else"), self.body(branch.body, Scope(scope, scope.dot))]
        return "".join(out) + self.tag(node.end, "endfor")

    # define / template / block.
    def template(self, tag: Tag, name: str, pipe: Pipe | None, scope: Scope, left: bool | None = None) -> str:
        if name not in self.macros:
            expr, comment = self.mark(tag, f'template "{name}" is not defined in this file')
            return comment + self.tag(tag, expr.at(OR), "{", False)
        expr, comment = self.expr(pipe, scope, tag) if pipe else (Expr("none", Type("nil")), "")
        self.calls.setdefault(name, []).append((tag.start, expr.type))
        left = False if comment else left
        return comment + self.tag(tag, f"{self.macros[name]}({expr.at(OR)})", "{", left)

    def macro(self, node: Define) -> str:
        """A define's body and `endmacro`; its argument's type is what the calls pass."""
        data = Expr("data", _common([t for _, t in self.calls.get(node.name, [])]), pure=True)
        scope = Scope(None, data, root=data)
        scope.names.add("data")
        body = self.body(node.body, scope)
        if node.block:
            return body + f"{{%{'-' if node.end.left else ''} endmacro %}}"
        return body + self.tag(node.end, "endmacro")

    def moved(self, node: Define) -> str:
        note = f'clm migrate: template "{node.name}" ({self.macros[node.name]}) is at the top of this file'
        breaks = "\n" * self.source.count("\n", node.tag.start, node.end.end)
        left, right = "-" if node.tag.left else "", "-" if node.end.right else ""
        return f"{{#{left} {note}: Jinja macros must come before their use{breaks} {right}#}}"


def _common(types: list[Type]) -> Type:
    """What every call passes to a macro: the type they share, or the fields all their records share."""
    if len(set(types)) == 1:
        return types[0]
    if types and all(t.kind == "record" for t in types):
        shared = set.intersection(*(set(t.fields) for t in types))
        return Type("record", ANY, fields=tuple(f for f in types[0].fields if f in shared))
    return ANY


def _namespaced(nodes: list[Node]) -> set[int]:
    found: set[int] = set()

    def walk(nodes: list[Node], visible: dict[str, tuple[int, int]], loops: int) -> None:
        scope = dict(visible)
        for node in nodes:
            if isinstance(node, Action) and node.pipe.decl:
                name = node.pipe.decl[-1]
                if not node.pipe.assign:
                    scope[name] = (id(node), loops)
                elif name in scope and scope[name][1] < loops:
                    found.add(scope[name][0])
            elif isinstance(node, Control):
                for branch in node.branches:
                    walk(branch.body, scope, loops + (node.kind == "range" and branch.pipe is not None))
            elif isinstance(node, Define):
                walk(node.body, {}, 0)

    walk(nodes, {}, 0)
    return found
