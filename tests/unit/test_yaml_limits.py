"""YAML that would make CLM build without bound is refused as a YAML error naming the line, by every loader CLM
reads YAML with: nesting past MAX_DEPTH (a RecursionError, or a crash of libyaml's C composer, on main), aliases
that multiply a document (a "billion laughs": minutes and gigabytes on main), an alias inside its own anchor."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from clm.errors import RenderError
from clm.pool_fields import karpenter_requirements
from clm.render.cfn_yaml import load_template
from clm.render.config_items import parse_defaults
from clm.render.manifests import split_manifests
from clm.yaml_limits import ALIAS_ALLOWANCE, MAX_DEPTH
from clm.yamlutil import error_line, load_all_with_lines, load_with_lines, plain, safe_load
from tests.unit.test_fuzz_render import LAST_MANIFEST, render_all, with_file

OBJECT = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
LOADERS: dict[str, Callable[[str], Any]] = {
    "lines": load_with_lines,
    "documents": load_all_with_lines,
    "documents, duplicates kept": lambda text: load_all_with_lines(text, []),
    "cloudformation": load_template,
    "plain": safe_load,
}


def nested(depth: int) -> str:
    """A flow sequence `depth` levels deep under the key `x` (one more level: the mapping)."""
    return "x: " + "[" * (depth - 1) + "]" * (depth - 1) + "\n"


def bomb(levels: int, row: str = "{name}: &{name} [{items}]", fanout: int = 9) -> str:
    """Anchors each aliasing the previous level `fanout` times (`row` per level): 9**levels nodes in a few hundred
    bytes."""
    items = [", ".join(["lol"] * fanout)] + [", ".join([f"*l{n - 1}"] * fanout) for n in range(1, levels)]
    return "".join(row.format(name=f"l{n}", items=text) + "\n" for n, text in enumerate(items))


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5000, 200_000])
def test_deep_nesting_is_a_yaml_error_with_its_line(loader: str, depth: int) -> None:
    text = "a: 1\n" + nested(depth)
    with pytest.raises(yaml.YAMLError) as error:
        LOADERS[loader](text)
    assert f"nested deeper than {MAX_DEPTH} levels" in str(error.value)
    assert error_line(error.value) == 2


@pytest.mark.parametrize("loader", LOADERS)
def test_nesting_to_the_limit_loads_and_walks(loader: str) -> None:
    """MAX_DEPTH levels load, and a recursive walker over the result (as CLM's checks are) stays within Python's
    recursion limit."""
    data = LOADERS[loader](nested(MAX_DEPTH))
    assert plain(data) is not None


@pytest.mark.parametrize("loader", LOADERS)
def test_an_alias_bomb_is_refused_fast_with_its_line(loader: str) -> None:
    started = time.monotonic()
    with pytest.raises(yaml.YAMLError) as error:
        LOADERS[loader](bomb(9))
    assert time.monotonic() - started < 1
    assert f"(at most {ALIAS_ALLOWANCE:,} more than it writes)" in str(error.value)
    assert error_line(error.value) == 5  # the first alias past the allowance


@pytest.mark.parametrize("loader", LOADERS)
def test_an_alias_inside_its_anchor_is_refused(loader: str) -> None:
    with pytest.raises(yaml.YAMLError, match=r"alias \*a is inside the node it refers to") as error:
        LOADERS[loader]("ok: 1\nx: &a [1, {y: *a}]\n")
    assert error_line(error.value) == 2


def test_aliases_as_configurations_use_them_load() -> None:
    """Merge keys and repeated blocks (the prometheus configuration in Zalando's corpus uses `<<: *anchor` in a
    ConfigMap's text); and aliases adding up to the allowance beyond what a document writes."""
    merged = load_with_lines("base: &b {scheme: http, port: 9}\njobs:\n- <<: *b\n  job: a\n- <<: *b\n  job: b\n")
    assert plain(merged["jobs"]) == [
        {"scheme": "http", "port": 9, "job": "a"},
        {"scheme": "http", "port": 9, "job": "b"},
    ]
    block = "[" + ", ".join(["x"] * 99) + "]"  # 100 nodes with its sequence
    text = f"a: &a {block}\n" + "".join(f"b{n}: *a\n" for n in range(ALIAS_ALLOWANCE // 100))
    assert len(safe_load(text)) == ALIAS_ALLOWANCE // 100 + 1


def test_documents_are_counted_each_on_its_own() -> None:
    """Anchors end with their document; so does the allowance."""
    document = "a: &a [" + ", ".join(["x"] * 999) + "]\n" + "".join(f"b{n}: *a\n" for n in range(9))
    assert len(load_all_with_lines("---\n".join([document] * 20))) == 20


def test_a_manifest_alias_bomb_fails_the_rendering_fast_naming_file_and_line() -> None:
    """On main, a manifest of 440 bytes (8 levels) rendered after 90 s, a 10-level one never."""
    started = time.monotonic()
    with pytest.raises(RenderError) as error:
        render_all(with_file(LAST_MANIFEST, (OBJECT + bomb(10)).encode()))
    assert time.monotonic() - started < 5
    assert f"{LAST_MANIFEST}:8: rendered YAML is invalid: aliases add " in str(error.value)


def test_a_deep_manifest_fails_the_rendering_naming_file_and_line() -> None:
    with pytest.raises(RenderError) as error:
        render_all(with_file(LAST_MANIFEST, (OBJECT + "data:\n  x: " + "[" * 3000 + "]" * 3000 + "\n").encode()))
    assert f"{LAST_MANIFEST}:5: rendered YAML is invalid: nested deeper than {MAX_DEPTH} levels" in str(error.value)


@pytest.mark.parametrize(
    ("parse", "text", "line"),
    [
        (lambda text: split_manifests(text, "m.yaml", "c"), OBJECT + nested(5000), 4),
        (lambda text: parse_defaults(text, "c"), "a: b\n" + bomb(10), 6),
    ],
)
def test_render_errors_name_the_file_and_line(parse: Callable[[str], Any], text: str, line: int) -> None:
    with pytest.raises(RenderError) as error:
        parse(text)
    assert error.value.line == line and error.value.file, str(error.value)


def test_a_node_pools_requirements_item_that_is_too_deep_reads_as_none() -> None:
    """A registry value parsed as YAML (a Karpenter pool's `requirements`): one that does not parse is [], as CLM
    does; on main a deep one was a RecursionError."""
    assert karpenter_requirements({"requirements": "[" * 5000 + "]" * 5000}) == []
    requirements = bomb(9, "- key: {name}\n  operator: In\n  values: &{name} [{items}]")
    assert karpenter_requirements({"requirements": requirements}) == []
