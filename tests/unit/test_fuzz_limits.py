"""Fuzzing the bounds on bad input: YAML nesting depths and alias counts (registry files, manifests), control
characters in registry values, registry items around DynamoDB's size limit, templates multiplying, padding,
joining and looping by random sizes. Each input is accepted, or refused with the project's error naming where
(file and line, cluster and field); never another exception, never past a time bound, never a partial write."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from clm.errors import RenderError, ValidationError
from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry
from clm.registry.item_size import SPEC_ITEM_LIMIT, item_size
from clm.render.environment import TemplateEnvironment
from clm.render.limits import MAX_OUTPUT, MAX_VALUE
from clm.render.manifests import split_manifests
from clm.yaml_limits import MAX_DEPTH
from tests.unit.conftest import EXAMPLES
from tests.unit.test_yaml_limits import bomb

EXAMPLE = (EXAMPLES / "clusters.yaml").read_text()
# No wall-clock deadline: each test bounds the CPU time of what it fuzzes (`timed`), which load does not stretch.
FAST = settings(max_examples=40, deadline=None)
TIME_BOUND = 3  # seconds for one input, well below what any of them took on main (minutes, or a crash)
OBJECT = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"

# --- YAML: depth and aliases, in a registry file and in a manifest ----------------------------------------------

depths = st.integers(1, 3000) | st.integers(MAX_DEPTH - 6, MAX_DEPTH + 2)


@st.composite
def nested(draw: st.DrawFn) -> str:
    """A YAML value nested a random depth: flow brackets, or block sequences and mappings (one line per level)."""
    depth = draw(depths)
    if draw(st.booleans()):
        opening = draw(st.lists(st.sampled_from(["[", "{a: "]), min_size=depth, max_size=depth))
        closing = "".join("]" if part == "[" else "}" for part in reversed(opening))
        return "".join(opening) + "x" + closing
    return "\n" + "".join(" " * (8 + 2 * level) + draw(st.sampled_from(["- ", "a:\n"])) + (
        "\n" if level < depth - 1 else "x\n") for level in range(depth))  # fmt: skip


@st.composite
def aliases(draw: st.DrawFn) -> str:
    """Levels of anchors, each aliasing the one before a random number of times (a bomb when wide and deep)."""
    return "\n" + bomb(draw(st.integers(1, 9)), "        {name}: &{name} [{items}]", draw(st.integers(1, 12)))


def timed(function: Any, *args: Any) -> Any:
    """`function(*args)`, asserting it returned or raised within TIME_BOUND of this thread's CPU time: the bound is on
    runaway work, so other processes on a loaded machine (ci13: 12.7 s of wall time for an input of 0.2 s) do not
    count."""
    started = time.thread_time()
    try:
        return function(*args)
    finally:
        assert time.thread_time() - started < TIME_BOUND


@FAST
@given(nested() | aliases())
@example("[" * (MAX_DEPTH - 5) + "]" * (MAX_DEPTH - 5))  # with the file's 5 levels above: the limit, accepted
def test_a_registry_file_with_any_nesting_or_aliases_loads_or_names_file_and_line(value: str) -> None:
    """The value as the detail of a problem in kube-2's status (on main: made text by str(), alias expansions
    and all)."""
    status = f"  status:\n    problems:\n    - title: x\n      detail: {value}\n"
    text = EXAMPLE.replace("  lifecycle_status: ready\n", "  lifecycle_status: ready\n" + status)
    try:
        timed(load_clusters, text, "c.yaml")
    except ValidationError as error:
        assert str(error).startswith("c.yaml:"), str(error)
        line = int(str(error).split(":")[1])
        assert 1 <= line <= text.count("\n") + 1, str(error)


@FAST
@given(nested() | aliases())
def test_a_manifest_with_any_nesting_or_aliases_loads_or_names_file_and_line(value: str) -> None:
    text = OBJECT + f"data:\n  extra: {value}\n"
    try:
        manifests = timed(split_manifests, text, "m.yaml", "c")
    except RenderError as error:
        assert error.file == "m.yaml" and error.line and error.cluster_id == "c", str(error)
        return
    assert manifests[0].name == "a"


# --- registry values: control characters, item sizes ------------------------------------------------------------

CONTROL = [chr(c) for c in [*range(32), *range(127, 160)]] + ["\u2028", "\u2029", "\ufffe"]
STRING_FIELDS = ["alias: sandbox-dev", "region: eu-central-1", "local_id: kube-1", "- m5.large", "owner: team-platform",
                 "- name: default-worker", "profile: worker-default", "environment: test"]  # fmt: skip


@FAST
@given(st.sampled_from(STRING_FIELDS), st.sampled_from(CONTROL), st.sampled_from(["start", "middle", "end"]))
@example("- m5.large", "\n", "end")  # `$` matched before it
def test_a_control_character_in_a_registry_value_is_refused_naming_the_field(field: str, char: str, at: str) -> None:
    head, value = field.rsplit(" ", 1)
    cut = {"start": 0, "middle": len(value) // 2, "end": len(value)}[at]
    edited = value[:cut] + char + value[cut:]
    text = EXAMPLE.replace(field, f"{head} {json.dumps(edited)}", 1)  # JSON: a YAML double-quoted scalar
    with pytest.raises(ValidationError) as error:
        timed(load_clusters, text, "c.yaml")
    assert str(error.value).startswith("c.yaml:4: cluster aws:123456789012:eu-central-1:kube-1: "), str(error.value)
    assert "(line " in str(error.value)


@pytest.fixture
def registry(example_registry: DynamoRegistry) -> DynamoRegistry:
    return example_registry


@settings(FAST, max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(-300, 300), st.sampled_from(["x", "é", "中", "😀"]))
@example(0, "x")
@example(1, "😀")
def test_an_item_around_the_size_limit_is_stored_whole_or_refused_before_writing(
    registry: DynamoRegistry, offset: int, char: str
) -> None:
    """Sizes counted in UTF-8 bytes as DynamoDB does: below the limit the item is stored and read back equal (moto
    refuses items larger than DynamoDB allows), above it nothing changes."""
    cluster = registry.get("aws:123456789012:eu-central-1:kube-2")
    cluster.config_items.pop("extra", None)
    registry.put(cluster)  # the fixture's table lives across examples: back to the example's item
    before = registry.get(cluster.id)
    base = item_size({"id": cluster.id, "spec": cluster.spec_dict(), "status": cluster.status.to_dict(), "revision": 0})
    room = SPEC_ITEM_LIMIT - base - len("extra") - 1 + offset
    cluster.config_items["extra"] = char * max(room // len(char.encode()), 0)
    try:
        timed(registry.put, cluster)
    except ValidationError as error:
        assert offset > 0 and f"cluster {cluster.id}: its registry item would be" in str(error), str(error)
        assert registry.get(cluster.id) == before
        return
    assert offset <= 0 or len(char.encode()) > 1  # a multi-byte character may not fill the last bytes
    assert registry.get(cluster.id) == cluster


# --- templates: sizes made by operators, filters, functions and loops -------------------------------------------

sizes = (
    st.integers(0, 200)
    | st.integers(0, 10**7)
    | st.integers(0, 10**12)
    | st.sampled_from([MAX_VALUE - 1, MAX_VALUE, MAX_VALUE + 1, MAX_OUTPUT, MAX_OUTPUT + 1])
)
counts = st.integers(0, 1000) | st.integers(0, 200_000)
# fmt: off
TEMPLATES = [
    "{{ 'ab' * N }}", "{{ ([1, 'x'] * N) | length }}", "{{ 'a' | center(N) }}", "{{ 'a\\nb' | indent(N) }}",
    "{{ '%0Nd' | format(1) }}", "{{ '%*d' % (N, 1) }}", "{{ '{:>N}'.format(1) }}", "{{ 'x'.ljust(N) }}",
    "{{ 'x'.zfill(N) }}", "{{ '\\t'.expandtabs(N) }}", "{{ range(K) | join('x' * M) }}",
    "{{ ('x' * M).join(['y'] * K) }}", "{{ ('a' * K) | replace('a', 'b' * M) }}", "{{ printf('%Nd', 1) }}",
    "{{ indent(N, 'a') }}", "{{ 7 ** N }}", "{{ (3 * K) ** M }}", "{{ lipsum(K) | length }}",
    "{% for i in range(K) %}{{ 'x' * M }}{% endfor %}",
    "{% set ns = namespace(l=[]) %}{% for i in range(K) %}{% set ns.l = ns.l + ['x' * M] %}{% endfor %}",
    "{% set a = ['x' * M] %}{% for i in range(K % 40) %}{% set a = [a, a] %}{% endfor %}{{ a | length }}",
]
# fmt: on


@FAST
@given(st.sampled_from(TEMPLATES), sizes, counts, st.integers(0, 10**6))
@example(TEMPLATES[-2], 0, 15887, 0)  # a list grown by `+`: 14 s of CPU before Limits remembered the sums' sizes
def test_a_template_renders_or_names_file_and_line(template: str, n: int, k: int, m: int) -> None:
    body = template.replace("N", str(n)).replace("K", str(k)).replace("M", str(m))
    env = TemplateEnvironment({"t.yaml": f"a: 1\nb: {body}\n".encode()})
    try:
        text = timed(env.render, "t.yaml", {}, "c")
    except RenderError as error:
        assert (error.file, error.line, error.cluster_id) == ("t.yaml", 2, "c"), str(error)
        assert str(error).startswith("cluster c: t.yaml:2: "), str(error)
        return
    assert len(text) <= MAX_OUTPUT
