"""YAML loading that remembers line numbers, so that errors can point at them."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml

from clm.yaml_limits import BoundedComposer


class LineDict(dict):
    """A mapping loaded from YAML that knows its line and the lines of its keys (1-based)."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        """Line of `key` in the source, or of the mapping itself when the key is absent."""
        return self.key_lines.get(key, self.line)


class LineList(list):
    """A sequence loaded from YAML that knows the line of each item (1-based)."""

    line: int = 0
    item_lines: list[int]


# libyaml's parser when PyYAML was built with it (about 10x faster), the pure-Python one otherwise.
_FastSafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# What PyYAML's constructors raise for an explicitly tagged value that does not parse (`!!int x`, `!!bool x`,
# `!!timestamp x`), instead of a YAMLError.
_CONSTRUCTOR_FAILURES = (ValueError, TypeError, AttributeError, KeyError)


class SafeLoader(BoundedComposer, _FastSafeLoader):
    """The safe loader, with clm.yaml_limits' bounds, whose tagged values that do not parse are YAML errors
    pointing at their line. It composes in Python over the parser's events (libyaml's when built with it)."""

    def __init__(self, stream: str | bytes):
        _FastSafeLoader.__init__(self, stream)
        self.anchors = {}

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """PyYAML's construction; a value its tag cannot read raises ConstructorError with the node's position."""
        try:
            return super().construct_object(node, deep)
        except _CONSTRUCTOR_FAILURES:
            value = f" {node.value!r}" if isinstance(node, yaml.ScalarNode) else ""
            raise yaml.constructor.ConstructorError(
                None, None, f"{node.tag}{value} cannot be read", node.start_mark
            ) from None


class _LineLoader(SafeLoader):
    """SafeLoader that builds LineDict/LineList and refuses duplicate keys."""

    duplicates: list[tuple[int, str]] | None = None  # when a list: duplicates are recorded, the last value kept


class _LastValueLoader(_LineLoader):
    """_LineLoader that keeps the last value of a duplicate key, as yaml.v2 does (sigs.k8s.io/yaml, non-strict:
    what kubectl and CLM decode manifests with), and records (line, key) of each duplicate."""

    def __init__(self, stream: str | bytes):
        super().__init__(stream)
        self.duplicates = []


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    result = LineDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    explicit = {id(key_node) for key_node, _ in node.value}  # a key set here may override a merged (`<<`) one
    loader.flatten_mapping(node)
    seen: set[Hashable] = set()
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, Hashable):  # a complex key (`? [a, b]`); PyYAML's own loader refuses it too
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found an unhashable key", key_node.start_mark
            )
        if key in seen:
            if loader.duplicates is None:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            loader.duplicates.append((key_node.start_mark.line + 1, str(key)))
        if id(key_node) in explicit:
            seen.add(key)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[str(key)] = key_node.start_mark.line + 1
    return result


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    result = LineList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def safe_load(text: str | bytes) -> Any:
    """Parse one YAML document into plain values with SafeLoader (raises yaml.YAMLError)."""
    return yaml.load(text, Loader=SafeLoader)


def load_with_lines(text: str | bytes) -> Any:
    """Parse one YAML document into LineDict/LineList values (raises yaml.YAMLError)."""
    return yaml.load(text, Loader=_LineLoader)


def error_line(exc: yaml.YAMLError) -> int | None:
    """The 1-based line a YAML error points at, if it says."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return mark.line + 1 if mark is not None else None


def error_reason(exc: yaml.YAMLError) -> str:
    """A one-line reason for a YAML error, without PyYAML's multi-line excerpt."""
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if problem:
        return f"{context}, {problem}" if context else str(problem)
    return str(exc).splitlines()[0]


def dump(data: Any) -> str:
    """Dump YAML in block style, keeping the key order given."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)


def plain(value: Any) -> Any:
    """Deep copy of loaded YAML as plain dicts and lists (for JSON, YAML dumps and equality)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def load_all_with_lines(text: str | bytes, duplicates: list[tuple[int, str]] | None = None) -> list[Any]:
    """Parse a multi-document YAML stream into LineDict/LineList values, keeping empty documents.

    A key twice in one mapping is a YAML error, unless `duplicates` is given: then the last value is kept (as
    yaml.v2 in kubectl does) and (line, key) of each duplicate is appended to it."""
    if duplicates is None:
        return list(yaml.load_all(text, Loader=_LineLoader))
    loader = _LastValueLoader(text)
    try:
        documents = []
        while loader.check_data():
            documents.append(loader.get_data())
    finally:
        loader.dispose()
    duplicates.extend(loader.duplicates or [])
    return documents


def scalar_text(value: Any) -> str:
    """A YAML scalar as the string CLM stores for a config item (true -> 'true', null -> '')."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)
