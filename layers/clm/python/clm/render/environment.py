"""The sandboxed Jinja2 environment: StrictUndefined, CLM's functions, errors with file and line."""

from __future__ import annotations

import hashlib
import posixpath
import traceback
from collections.abc import Mapping
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from clm.errors import RenderError
from clm.render.functions import FUNCTIONS, GLOBALS_ONLY


class TemplateEnvironment:
    """Renders templates from a repository's files; compiled templates are cached across clusters."""

    def __init__(self, files: Mapping[str, bytes]):
        self._files = files
        self._env = SandboxedEnvironment(
            loader=jinja2.FunctionLoader(self._load),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
            cache_size=-1,
        )
        self._env.globals.update(FUNCTIONS)
        self._env.globals.update(GLOBALS_ONLY)
        self._env.globals["manifest_hash"] = self._manifest_hash
        self._env.filters.update(FUNCTIONS)
        self._hashing = False

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
        """Render template `name` (a repository path) with `context`; errors name file and line."""
        try:
            return self._env.get_template(name).render(context)
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
            kind = "undefined variable" if isinstance(exc, jinja2.UndefinedError) else "error"
            raise RenderError(f"{kind}: {exc}", file, line, cluster_id) from None

    @jinja2.pass_context
    def _manifest_hash(self, context: jinja2.runtime.Context, relative: str) -> str:
        """SHA-256 of a sibling template rendered with the same variables (not reentrant)."""
        if self._hashing:
            raise RuntimeError("manifest_hash cannot be used inside a template it hashes")
        path = posixpath.normpath(posixpath.join(posixpath.dirname(context.name or ""), relative))
        self._hashing = True
        try:
            rendered = self.render(path, dict(context.parent))
        finally:
            self._hashing = False
        return hashlib.sha256(rendered.encode()).hexdigest()


def _template_position(exc: BaseException, default_file: str) -> tuple[str, int | None]:
    """The innermost template frame of a rendering error (Jinja rewrites tracebacks to templates)."""
    file, line = default_file, None
    for frame in traceback.extract_tb(exc.__traceback__):
        if not frame.filename.endswith(".py") and "<" not in frame.filename:
            file, line = frame.filename, frame.lineno
    return file, line
