"""Registry values reach templates as data, never as YAML syntax (docs/security.md).

Attacks through a config item, a node-pool name and an instance type into the stacks and manifests of
examples/config: the shipped examples splice with `| yaml` (the value stays one string); the same templates splicing
raw, as many users' templates do, are refused with a RenderError naming cluster, file, line and the value's origin,
before anything is stored.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from clm.config.tree import ConfigTree
from clm.errors import RenderError, ValidationError
from clm.model import Cluster
from clm.render.renderer import Renderer
from clm.render.splices import splice_problem
from clm.workflow.render_step import render_to_s3
from tests.unit.test_fuzz_render import CLUSTERS, TREE

KUBE_2 = CLUSTERS[1]  # two node pools: worker-default and worker-spot
RESOURCE = "\n  Evil:\n    Type: AWS::IAM::User\n#"
RAW_TREE = ConfigTree(  # the examples as templates that splice raw: {{ x | yaml }} -> "{{ x }}"
    version="raw",
    files={path: re.sub(rb"\{\{ (.*?) \| yaml \}\}", rb'"{{ \1 }}"', data) for path, data in TREE.files.items()},
    source="raw",
)


def with_items(cluster: Cluster, **items: str) -> Cluster:
    return dataclasses.replace(cluster, config_items={**cluster.config_items, **items})


def with_pool(cluster: Cluster, **fields: object) -> Cluster:
    return dataclasses.replace(cluster, node_pools=[dataclasses.replace(cluster.node_pools[0], **fields)])


ATTACKS = {
    "config item into the cluster stack": (
        with_items(KUBE_2, vpc_cidr='10.0.0.0/16"' + RESOURCE),
        "cluster/stack.yaml",
    ),
    "node-pool name into the node-pool stack": (
        with_pool(KUBE_2, name='w"' + RESOURCE),
        "cluster/node-pools/worker-default/stack.yaml",
    ),
    "instance type into the node-pool stack": (
        with_pool(KUBE_2, instance_types=['m5.large"' + RESOURCE]),
        "cluster/node-pools/worker-default/stack.yaml",
    ),
    "config item into a manifest": (
        with_items(KUBE_2, app_image='pause"\n        securityContext: {privileged: true}\n        #'),
        "cluster/manifests/example-app/02-workload.yaml",
    ),
    "config item closing a quote without a line break": (
        with_items(KUBE_2, app_image='pause", "privileged": "true'),
        "cluster/manifests/example-app/02-workload.yaml",
    ),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_injection_into_raw_splices_is_refused_before_anything_is_stored(aws, attack):
    cluster, file = ATTACKS[attack]
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="artefacts", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    with pytest.raises(RenderError) as caught:
        render_to_s3(s3, "artefacts", RAW_TREE, cluster)
    error, message = caught.value, str(caught.value)
    assert error.cluster_id == cluster.id and error.file == file and error.line, message
    assert f"cluster {cluster.id}: {file}:{error.line}: " in message
    assert re.search(
        r"(config item \w+ \(from the registry\)|node_pools\[0\] \(.*\): (name|instance_types\[0\])) = ", message
    )
    assert "not data where the template splices it raw" in message and "| yaml" in message
    assert s3.list_objects_v2(Bucket="artefacts").get("KeyCount") == 0


@pytest.mark.parametrize("attack", ["config item into the cluster stack", "config item into a manifest"])
def test_the_shipped_examples_keep_an_injection_attempt_as_one_string(attack):
    cluster, _ = ATTACKS[attack]
    rendered = Renderer(TREE).render(cluster)
    assert sorted(rendered.cluster_stack.template["Resources"]) == sorted(
        Renderer(TREE).render(KUBE_2).cluster_stack.template["Resources"]
    )
    if "stack" in attack:
        assert rendered.cluster_stack.template["Resources"]["Vpc"]["Properties"]["CidrBlock"].startswith('10.0.0.0/16"')
    else:
        web = next(m for c in rendered.components for m in c.manifests if m.kind == "Deployment")
        container = web.body["spec"]["template"]["spec"]["containers"][0]
        assert set(container) == {"name", "image", "resources"} and container["image"].startswith('pause"')


def test_import_refuses_names_and_text_that_are_never_legitimate():
    spec = KUBE_2.to_dict()
    spec["node_pools"][0]["name"] = 'w"' + RESOURCE
    spec["node_pools"][1]["instance_types"] = ['c5.xlarge"' + RESOURCE]
    spec["config_items"]["bell"] = "ring\x07"
    spec["alias"] = "two\nlines"
    with pytest.raises(ValidationError) as caught:
        Cluster.from_dict(spec)
    problems = "\n".join(caught.value.problems)
    assert "node_pools[0].name" in problems and "node_pools[1].instance_types[0]" in problems
    assert "config_items.'bell': contains '\\x07'" in problems and "alias: contains '\\n'" in problems
    spec = KUBE_2.to_dict()
    spec["config_items"]["api_server_ca"] = "-----BEGIN CERTIFICATE-----\r\nMIIB\tx\n-----END CERTIFICATE-----\n"
    assert Cluster.from_dict(spec).config_items["api_server_ca"].count("\n") == 3


LEGIT = {
    "alias": "Team A: prod #1 (eu) 'blue' \"x\"",
    "environment": "production/eu-west-1",
    "api_server_url": "https://kube-2.example.org:6443/path?x=1#frag",
}


@pytest.mark.parametrize("tree", [TREE, RAW_TREE], ids=["shipped", "raw"])
def test_legitimate_values_still_render(tree):
    items = {"app_image": "registry.example.org:5000/team/app:1.2", "vpc_cidr": "10.1.0.0/16"}
    cluster = dataclasses.replace(with_items(KUBE_2, **items), **(LEGIT if tree is TREE else {}))
    rendered = Renderer(tree).render(cluster)
    info = next(m for c in rendered.components for m in c.manifests if m.name == "cluster-info")
    if tree is TREE:
        assert info.body["data"]["alias"] == LEGIT["alias"]
    web = next(m for c in rendered.components for m in c.manifests if m.kind == "Deployment")
    assert web.body["spec"]["template"]["spec"]["containers"][0]["image"] == items["app_image"]


def render_one(template: str, **items: str) -> str:
    tree = ConfigTree(
        version="t", files={**RAW_TREE.files, "cluster/manifests/t/t.yaml": template.encode()}, source="t"
    )
    rendered = Renderer(tree).render(with_items(KUBE_2, **items))
    return json.dumps(next(m.body for c in rendered.components if c.name == "t" for m in c.manifests))


TEMPLATE = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t}\ndata:\n  "


@pytest.mark.parametrize(
    "splice",
    [
        'a: "{{ cluster.config_items.v }}"',
        "a: {{ cluster.config_items.v }}",
        "a: \"{{ 'x-' ~ cluster.config_items.v }}\"",
        'a: "{{ cluster.config_items.v | upper }}"',
        'a: "{{ cluster.config_items.v.strip() }}"',
        'a: "{{ split(cluster.config_items.v, "/")[0] }}"',
        "a: \"{{ join(',', [cluster.config_items.v]) }}\"",
        '{% set b %}x{{ cluster.config_items.v }}{% endset %}a: "{{ b }}"',
        '{% macro m(x) %}a: "{{ x }}"{% endmacro %}{{ m(cluster.config_items.v) }}',
        "{% for k, v in cluster.config_items.items() if k == 'v' %}a: \"{{ v }}\"{% endfor %}",
    ],
)
def test_values_derived_from_registry_values_are_checked_too(splice):
    with pytest.raises(RenderError, match=r"config item v \(from the registry\)"):
        render_one(TEMPLATE + splice, v='x"/, "b": "c')
    assert render_one(TEMPLATE + splice, v="fine/value") is not None


@pytest.mark.parametrize(
    ("line", "value", "problem"),
    [
        ('k: "{}"', 'a"b', "'\"' inside a double-quoted string"),
        ('k: "{}"', "a\\", "'\\\\' inside a double-quoted string"),
        ('k: "{}"', "a: b #c 'd'", None),
        ("k: '{}'", "it's", "' inside a single-quoted string"),
        ("k: '{}'", 'say "hi": #1', None),
        ("k: {}", "https://example.org:443/x#y", None),
        ("k: {}", "a: b", "': ' makes a mapping"),
        ("k: {}", "a:", "': ' makes a mapping"),
        ("k: {}", "a #b", "' #' starts a comment"),
        ("k: {}", "!Ref Evil", "'!' starts a YAML construct there"),
        ("k: {}", "*alias", "'*' starts a YAML construct there"),
        ("k: {}", "- a", "'-' starts a YAML construct there"),
        ("k: {}", "-1", None),
        ("k: {}", "|", "'|' starts a YAML construct there"),
        ("k: {}", "[a]", "'[' starts a YAML construct there"),
        ("k: x {}", "a, [b]", None),
        ("k: [{}]", "a, b", "a flow indicator (, [ ] { }) inside a flow collection"),
        ("k: !ImportValue {}", '"x"', "'\"' starts a YAML construct there"),
        ("{}", "---", "a document marker"),
        ("# {}", "a: b #c", None),
        ("# {}", "a\nb: c", "a line break"),
        ('k: "{}"', "a\u2028b", "control character '\\u2028'"),
        ("k: |\n  script {}", "a: b # 'c\"", None),
        ("k: |\n  {}", "line\n  more", None),
        (
            "k: |\n  {}",
            "line\nk2: evil",
            "a line break followed by a line indented less than the block scalar's 2 spaces",
        ),
    ],
)
def test_what_a_raw_splice_may_hold_depends_on_where_it_lands(line, value, problem):
    before, after = line.split("{}")
    assert splice_problem(before + value + after, len(before), len(before) + len(value)) == problem


@pytest.mark.parametrize("value", ['a"b\\c', "x\ny: z", "\u2028\x85\x7f", "#!*&|>-? [{,}]", "3", "true", "", "ü😀"])
def test_the_yaml_and_json_filters_give_a_literal_of_the_same_value(value):
    text = render_one(
        TEMPLATE + "a: {{ cluster.config_items.v | yaml }}\n  b: {{ cluster.config_items.v | json }}", v=value
    )
    data = json.loads(text)["data"]
    assert data == {"a": value, "b": value}
