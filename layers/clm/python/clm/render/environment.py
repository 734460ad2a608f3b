"""The sandboxed Jinja2 environment: StrictUndefined, CLM's functions, errors with file and line, and registry
values kept as data (clm.render.origins follows them, clm.render.splices checks where they land)."""

from __future__ import annotations

import functools
import hashlib
import posixpath
import traceback
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.nodes import Concat
from jinja2.runtime import Macro
from jinja2.sandbox import SandboxedEnvironment

from clm.errors import RenderError
from clm.render.functions import FUNCTIONS, GLOBALS_ONLY
from clm.render.growth import Estimate, filter_estimates, global_estimates, method_estimate
from clm.render.limits import BINOPS, Limits, TooLarge, text_size
from clm.render.lookups import Ec2Lookups, template_functions
from clm.render.origins import RegistryStr, decoding, origin_in, propagating, retaint
from clm.render.quoting import QUOTING_FILTERS
from clm.render.splices import SpliceRecorder, strip_marks

# Their output is data wherever it is spliced: they see values without splice markers, and give plain text.
ENCODERS = frozenset({"base64", "sha256", "tojson", "urlencode", "yaml", "json"})


def _encoder(function: Callable[..., Any], unmark: Callable[[Any], Any] = strip_marks) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(*map(unmark, args), **kwargs)

    wrapper.clm_encoder = True  # type: ignore[attr-defined]
    return wrapper


def _filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    return _encoder(function) if name in ENCODERS else propagating(function)


class _CodeGenerator(CodeGenerator):
    """Jinja's code generator with `~` going through the environment, so that concatenated text keeps its origin,
    and every piece of output counted (clm.render.limits) as it is written or captured."""

    def _output_const_repr(self, group: Any) -> str:
        return f"environment.limits.emit({super()._output_const_repr(group)})"

    def _output_child_pre(self, node: Any, frame: Frame, finalize: Any) -> None:
        self.write("environment.limits.emit(")
        super()._output_child_pre(node, frame, finalize)

    def _output_child_post(self, node: Any, frame: Any, finalize: Any) -> None:
        super()._output_child_post(node, frame, finalize)
        self.write(")")

    @optimizeconst
    def visit_Concat(self, node: Concat, frame: Frame) -> None:  # noqa: N802 (Jinja's visitor name)
        self.write("environment.concat_text((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _Environment(SandboxedEnvironment):
    """The sandbox, with text derived from registry values keeping its origin through `~` and calls, and what a
    template makes bounded (clm.render.limits) in its operators, `~`, calls and output."""

    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset(BINOPS)

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.limits = Limits()
        self.global_estimates: dict[int, tuple[str, Estimate]] = {}  # id of a global -> its name, its estimate

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """`*`, `**`, `+` and `%`, refused when they would make too much."""
        return self.limits.binop(operator, left, right)

    def concat_text(self, parts: tuple[Any, ...]) -> str:
        """`a ~ b ~ ...`: derived from a registry value if any part is one."""
        self.limits.given("~", parts)
        text = self.limits.made("~", "".join(map(str, parts)))
        origin = origin_in(parts)
        return text if origin is None else retaint(text, origin)

    def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        """A call from a template, bounded; text it returns derives from the registry values it was given (macros
        aside: their output is template text with the values already marked)."""
        function = getattr(obj, "__wrapped__", obj)  # a str's format method comes wrapped by the sandbox
        owner = getattr(function, "__self__", None)
        name, estimate = self.global_estimates.get(id(obj)) or (
            getattr(function, "__name__", type(function).__name__),
            method_estimate(function, text_size),
        )
        what = f"{type(owner).__name__}.{name}()" if owner is not None else f"{name}()"
        result = self.limits.call(
            what, functools.partial(SandboxedEnvironment.call, self, context, obj), args, kwargs, estimate
        )
        if isinstance(owner, list | dict | set):  # a method that may have grown its value
            self.limits.forget(owner)
            self.limits.given(what, (owner,))
        kind = type(result)
        if kind is not str and kind is not list:  # numbers, mappings, RegistryStr already
            return result
        owner = getattr(obj, "__self__", None)
        origin = owner.origin if type(owner) is RegistryStr else origin_in(args) or origin_in(kwargs.values())
        if origin is None or isinstance(obj, Macro) or getattr(obj, "clm_encoder", False):
            return result
        return retaint(result, origin)


class TemplateEnvironment:
    """Renders templates from a repository's files; compiled templates are cached across clusters."""

    def __init__(self, files: Mapping[str, bytes], lookups: Ec2Lookups | None = None):
        """`lookups` answers the functions that need EC2 (clm.render.lookups); without, they fail."""
        self._files = files
        self._splices = SpliceRecorder()
        self._env = _Environment(
            loader=jinja2.FunctionLoader(self._load),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
            cache_size=-1,
            finalize=self._finalize,
        )
        functions = {name: _encoder(f) if name in ENCODERS else f for name, f in FUNCTIONS.items()}
        self._env.globals.update(functions)
        self._env.globals.update(GLOBALS_ONLY)
        self._env.globals.update(template_functions(lookups))
        self._env.globals["manifest_hash"] = self._manifest_hash
        estimates = filter_estimates(text_size)

        def limited(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
            return self._env.limits.guard(f"filter {name}", function, estimates.get(name))

        filters = {**self._env.filters, **FUNCTIONS, **QUOTING_FILTERS}
        self._env.filters = {name: _filter(name, limited(name, function)) for name, function in filters.items()}
        # What base64 encodes is a document of its own (user data: cloud-config, a script): its values are checked.
        self._env.globals["base64"] = _encoder(FUNCTIONS["base64"], self._unmark)
        self._env.filters["base64"] = _encoder(limited("base64", FUNCTIONS["base64"]), self._unmark)
        self._env.globals["base64_decode"] = decoding(FUNCTIONS["base64_decode"])
        self._env.filters["base64_decode"] = decoding(limited("base64_decode", FUNCTIONS["base64_decode"]))
        self._env.global_estimates = {
            id(self._env.globals[name]): (name, estimate)
            for name, estimate in global_estimates(text_size).items()
            if name in self._env.globals
        }
        self._hashing: list[str] = []  # the templates manifest_hash is rendering, outermost first

    def _load(self, name: str) -> tuple[str, str, Any] | None:
        data = self._files.get(name)
        if data is None:
            return None
        try:
            text = data.decode()
        except UnicodeDecodeError as exc:
            raise RenderError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=name) from None
        return text, name, lambda: True

    def render(self, name: str, context: dict[str, Any], cluster_id: str | None = None) -> str:
        """Render template `name` (a repository path) with `context`; errors name file and line.

        Registry values in `context` must come as RegistryStr (clm.render.origins.registry_view) to be checked.
        """
        if not self._hashing:
            self._splices.splices.clear()
            self._env.limits.reset()
        try:
            return self._splices.check(self._env.get_template(name).render(context), name, cluster_id)
        except RenderError as exc:
            if exc.cluster_id is None and cluster_id is not None:
                raise RenderError(exc.message, exc.file, exc.line, cluster_id) from None
            raise
        except jinja2.TemplateSyntaxError as exc:
            raise RenderError(
                f"template syntax error: {exc.message}", exc.filename or name, exc.lineno, cluster_id
            ) from None
        except jinja2.TemplateNotFound as exc:
            raise RenderError(f"template not found: {exc.name}", name, None, cluster_id) from None
        except Exception as exc:  # undefined variables, sandbox violations, function errors
            file, line = _template_position(exc, name)
            kinds = {jinja2.UndefinedError: "undefined variable", TooLarge: "too large"}
            kind = next((label for error, label in kinds.items() if isinstance(exc, error)), "error")
            raise RenderError(f"{kind}: {str(exc) or type(exc).__name__}", file, line, cluster_id) from None

    def _finalize(self, value: Any) -> Any:
        """Jinja's finalize: a container too large to become text is refused before it does (clm.render.limits)."""
        if type(value) is not str:
            self._env.limits.given("{{ ... }}", (value,))
        return self._splices.finalize(value)

    def _unmark(self, value: Any) -> Any:
        return self._splices.check(value, "", None) if isinstance(value, str) else value

    def includes(self, name: str) -> list[str]:
        """The templates `name` includes, imports or extends by a constant name."""
        from jinja2 import meta

        source = self._load(name)
        if source is None:
            return []
        try:
            found = meta.find_referenced_templates(self._env.parse(source[0], name, name))
        except jinja2.TemplateSyntaxError:
            return []
        return [template for template in found if template]

    @jinja2.pass_context
    def _manifest_hash(self, context: jinja2.runtime.Context, relative: str) -> str:
        """SHA-256 of a sibling template rendered with the same variables; a template it hashes may hash others
        (as CLM's manifestHash), but never one already being rendered (a cycle)."""
        path = posixpath.normpath(posixpath.join(posixpath.dirname(context.name or ""), relative))
        chain = [*self._hashing, context.name or ""]
        if path in chain:
            raise RuntimeError(f"manifest_hash of {path} is a cycle: {' -> '.join([*chain, path])}")
        self._hashing.append(context.name or "")
        try:
            rendered = self.render(path, dict(context.parent))
        finally:
            self._hashing.pop()
        return hashlib.sha256(rendered.encode()).hexdigest()


def _template_position(exc: BaseException, default_file: str) -> tuple[str, int | None]:
    """The innermost template frame of a rendering error (Jinja rewrites tracebacks to templates)."""
    file, line = default_file, None
    for frame in traceback.extract_tb(exc.__traceback__):
        if not frame.filename.endswith(".py") and "<" not in frame.filename:
            file, line = frame.filename, frame.lineno
    return file, line
