"""Fuzzing the templates of examples/config: damaged Jinja, undefined variables, bad YAML, documents that are no
Kubernetes objects. Rendering either succeeds with a storable result or raises RenderError naming the file (and line
when known), and a bad manifest fails the whole rendering before anything is produced."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from clm.config.local import LocalSource
from clm.config.tree import ConfigTree
from clm.errors import RenderError
from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm.render import stored
from clm.render.renderer import RenderedCluster, Renderer
from clm.workflow.render_step import render_to_s3
from tests.damage import YAML_DAMAGE, damaged
from tests.unit.conftest import EXAMPLES

TREE = LocalSource(EXAMPLES / "config").fetch()
CLUSTERS = load_clusters((EXAMPLES / "clusters.yaml").read_text())  # kube-2 uses both node-pool profiles
FUZZ = settings(max_examples=150, deadline=None)
BUCKET = "artefacts"
MANIFEST_FILES = sorted(
    path for path in TREE.files if path.startswith("cluster/manifests/") and "deletions" not in path
)

# Jinja syntax, undefined variables, sandbox escapes, failing functions, missing and recursive templates.
# fmt: off
JINJA_DAMAGE = [
    "{{", "}}", "{%", "%}", "{#", "#}", "{{ }}", "{% if %}", "{% endif %}", "{% for x in cluster.node_pools %}",
    "{% endfor %}", "{% set %}", "{% raw %}", "{{ no_such_variable }}", "{{ cluster.no_such_field }}",
    "{{ cluster.config_items.no_such_item }}", "{{ values.missing }}", "{{ node_pool.name }}", "{{ 1 / 0 }}",
    "{{ cluster.__class__.__mro__ }}", "{{ cluster.node_pool('nope') }}", "{{ base64_decode('%%%') }}",
    "{{ parse_int('x') }}", "{{ az_id(3) }}", "{{ indent('x', 2) }}", "{{ split(1) }}",
    "{{ manifest_hash('no-such.yaml') }}", "{{ manifest_hash('02-workload.yaml') }}", "{% include 'no/such.yaml' %}",
    "{% import 'no/such.yaml' as x %}", "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "{{ 'a' | no_filter }}",
    "{{ cluster | tojson }}",
]
# Whole documents that are no Kubernetes object.
NOT_OBJECTS = [
    "apiVersion: v1\nmetadata: {name: x}\n", "apiVersion: v1\nkind: ConfigMap\n",
    "kind: ConfigMap\nmetadata: {name: x}\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [x]}\n", "apiVersion: v1\nkind: ''\nmetadata: {name: x}\n",
    "apiVersion: 1\nkind: ConfigMap\nmetadata: {name: x}\n", "- a\n- b\n", "42\n", "plain text\n", "metadata: x\n",
]
# fmt: on
damage = st.sampled_from(JINJA_DAMAGE + YAML_DAMAGE + [f"---\n{doc}---\n" for doc in NOT_OBJECTS]).map(str.encode)


@st.composite
def damaged_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """One file of the example tree, damaged."""
    path = draw(st.sampled_from(sorted(TREE.files)))
    return path, draw(damaged(TREE.files[path], damage))


def with_file(path: str, data: bytes) -> ConfigTree:
    """The example tree with `path` replaced."""
    return ConfigTree(version="fuzz", files={**TREE.files, path: data}, source="fuzz")


def render_all(tree: ConfigTree) -> list[RenderedCluster]:
    renderer = Renderer(tree)
    return [renderer.render(cluster) for cluster in CLUSTERS]


def assert_names_the_file(error: RenderError, cluster: Cluster, broken: str, tree: ConfigTree) -> None:
    """The error names the cluster and a file: the damaged one, a template it refers to that does not exist, or
    (damaged config defaults change what every template sees) any template."""
    message = str(error)
    assert error.cluster_id == cluster.id and f"cluster {cluster.id}" in message, message
    assert error.file, message
    assert f"{error.file}:{error.line}" in message if error.line else f"{error.file}: " in message, message
    assert error.file == broken or error.file not in tree.files or broken.endswith("config-defaults.yaml"), (
        broken,
        message,
    )


def assert_storable(renderings: list[RenderedCluster]) -> None:
    """A rendering the workflow can store and read back unchanged (what the later steps apply), whose deletions
    name their targets with strings."""
    for rendered in renderings:
        again = stored.loads(stored.dumps(rendered))
        assert stored.dumps(again) == stored.dumps(rendered)
        for deletion in [*rendered.deletions.pre_apply, *rendered.deletions.post_apply]:
            targets = (deletion.kind, deletion.namespace, deletion.name or "", deletion.selector or "")
            assert all(isinstance(target, str) for target in targets), deletion


LAST_MANIFEST = "cluster/manifests/example-app/03-config.yaml"
DELETIONS = "cluster/manifests/deletions.yaml"


@FUZZ
@given(damaged_files())
@example((LAST_MANIFEST, b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\ndata: {day: 2024-01-01}\n"))
@example((LAST_MANIFEST, b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\ndata: {1: one, a: b}\n"))
@example((LAST_MANIFEST, b"apiVersion: v1\nkind: Secret\nmetadata: {name: d}\ndata: {a: !!binary aGk=}\n"))
@example(("cluster/config-defaults.yaml", b"app_replicas: !!int three\n"))
@example((DELETIONS, b"pre_apply:\n- {kind: Pod, namespace: a, name: [x]}\n"))
def test_damaged_template_renders_or_names_the_file(broken: tuple[str, bytes]) -> None:
    path, data = broken
    tree = with_file(path, data)
    renderer = Renderer(tree)
    for cluster in CLUSTERS:
        try:
            rendered = renderer.render(cluster)
        except RenderError as error:
            assert_names_the_file(error, cluster, path, tree)
            continue
        assert_storable([rendered])


# --- never a partial apply ------------------------------------------------------------------------------------

BAD_DOCUMENTS = [*NOT_OBJECTS, "a: [b\n", "key: value: other\n", "{{ cluster.no_such_field }}\n", "{% if %}\n"]


@pytest.fixture
def s3(aws: boto3.Session) -> Any:
    """moto's S3 with the artefact bucket, where the render step stores renderings."""
    client = aws.client("s3")
    client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    return client


@settings(FUZZ, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])  # S3 stays empty
@given(st.sampled_from(MANIFEST_FILES), st.sampled_from(BAD_DOCUMENTS), st.booleans())
def test_one_bad_manifest_fails_the_rendering_before_anything_is_stored(
    s3: Any, path: str, document: str, first: bool
) -> None:
    good = TREE.files[path].decode()
    text = f"{document}---\n{good}" if first else f"{good}\n---\n{document}"
    tree = with_file(path, text.encode())
    for cluster in CLUSTERS:
        with pytest.raises(RenderError) as error:
            render_to_s3(s3, BUCKET, tree, cluster)
        assert error.value.file == path and error.value.cluster_id == cluster.id, str(error.value)
    assert s3.list_objects_v2(Bucket=BUCKET)["KeyCount"] == 0


def test_the_undamaged_examples_render_and_store(s3: Any) -> None:
    """The baseline the fuzzing damages: every example cluster renders, and its rendering is stored once."""
    assert_storable(render_all(TREE))
    for cluster in CLUSTERS:
        assert render_to_s3(s3, BUCKET, TREE, cluster)["rendering"].startswith("renderings/")
    assert s3.list_objects_v2(Bucket=BUCKET)["KeyCount"] == len(CLUSTERS)


def test_bad_yaml_in_a_document_is_named_with_its_line() -> None:
    path = LAST_MANIFEST
    tree = with_file(path, b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: x\ndata: a: b\n")
    with pytest.raises(RenderError) as error:
        render_all(tree)
    assert (error.value.file, error.value.line) == (path, 6)
    assert f"{path}:6: rendered YAML is invalid: mapping values are not allowed" in str(error.value)


def test_safe_yaml_only() -> None:
    """Python tags in a template stay errors (safe loading), not calls."""
    path = MANIFEST_FILES[0]
    with pytest.raises(RenderError, match="could not determine a constructor"):
        render_all(
            with_file(path, b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: !!python/object/apply:os.getpid []\n")
        )


@pytest.mark.parametrize(
    ("document", "line", "message"),
    [
        ("data:\n  day: 2024-01-01\n", 5, "data.day: a YAML date (datetime.date(2024, 1, 1)) is not JSON; quote it"),
        ("data:\n  1: one\n", 5, "data: key 1 must be a string (quote it)"),
        ("spec:\n  items:\n  - a\n  - !!binary aGk=\n", 7, "spec.items[1]: a YAML bytes (b'hi') is not JSON"),
        ("spec:\n  ratio: .nan\n", 5, "spec.ratio: nan is not a JSON number"),
    ],
)
def test_yaml_only_values_are_named_with_path_and_line(document: str, line: int, message: str) -> None:
    head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
    with pytest.raises(RenderError) as error:
        render_all(with_file(LAST_MANIFEST, (head + document).encode()))
    assert f"{LAST_MANIFEST}:{line}: document 1: {message}" in str(error.value)


def test_cloudformation_timestamps_stay_text() -> None:
    """CloudFormation reads `Version: 2012-10-17` as a string; so does the rendered template (JSON-able)."""
    stack = TREE.files["cluster/stack.yaml"].replace(b'Version: "2012-10-17"', b"Version: 2012-10-17")
    rendered = render_all(with_file("cluster/stack.yaml", stack))[0]
    role = rendered.cluster_stack.template["Resources"]["NodeRole"]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Version"] == "2012-10-17"
    assert json.loads(json.dumps(rendered.cluster_stack.template)) == rendered.cluster_stack.template
