"""Rendering the config repository: defaults, stacks, manifests, deletions, functions and errors."""

from __future__ import annotations

import dataclasses

import pytest

from clm.config.tree import ConfigTree
from clm.errors import RenderError
from clm.render.cfn_yaml import load_template
from clm.render.renderer import Renderer


def tree_with(base: ConfigTree, **changes: str | None) -> ConfigTree:
    """The tree with files replaced (keys use __ for / and _dot_ for .); None removes a file."""
    files = dict(base.files)
    for key, text in changes.items():
        path = key.replace("__", "/").replace("_dot_", ".")
        if text is None:
            files.pop(path, None)
        else:
            files[path] = text.encode()
    return ConfigTree(version="test", files=files, source="test-tree")


def render_error(tree: ConfigTree, cluster) -> RenderError:
    with pytest.raises(RenderError) as info:
        Renderer(tree).render(cluster)
    return info.value


def test_example_renders_every_cluster(example_tree, example_clusters):
    renderer = Renderer(example_tree)
    kube1, kube2 = (renderer.render(c) for c in example_clusters)
    assert kube1.version == f"{example_tree.version}#{kube1.version.split('#')[1]}"
    assert sorted(kube2.node_pool_stacks) == ["batch", "default-worker"]
    assert [c.name for c in kube1.components] == ["cluster-config", "example-app"]
    kinds = [m.kind for c in kube1.components for m in c.manifests]
    assert kinds == [
        "ConfigMap",
        "ClusterRole",
        "Namespace",
        "Deployment",
        "PodDisruptionBudget",
        "DaemonSet",
        "ConfigMap",
    ]
    assert kube1.cluster_stack.template["Resources"]["Vpc"]["Type"] == "AWS::EC2::VPC"
    spot = kube2.node_pool_stacks["batch"].template["Resources"]["LaunchTemplate"]
    assert spot["Properties"]["LaunchTemplateData"]["InstanceMarketOptions"]["MarketType"] == "spot"
    assert [d.name for d in kube1.deletions.pre_apply] == ["web-legacy"]
    assert kube1.deletions.post_apply[1].namespace == ""


def test_defaults_fill_missing_items_and_registry_wins(example_tree, example_clusters):
    kube1 = Renderer(example_tree).render(example_clusters[0])
    items = kube1.cluster.config_items
    assert items["worker_ami"] == "ami-0c1a7f89451184c8b"  # from config-defaults.yaml
    assert items["availability_zones"] == "eu-central-1a,eu-central-1b,eu-central-1c"  # rendered default
    assert items["drain_grace_period"] == "6h"
    changed = dataclasses.replace(example_clusters[0], config_items={"app_replicas": "5"})
    deployment = Renderer(example_tree).render(changed).components[1].manifests[1]
    assert deployment.body["spec"]["replicas"] == 5


def test_version_uses_the_registry_spec_not_the_defaults(example_tree, example_clusters):
    changed_defaults = tree_with(example_tree, cluster__config_defaults_dot_yaml="worker_ami: ami-new\n")
    first = Renderer(example_tree).render(example_clusters[0]).version
    second = Renderer(changed_defaults).render(example_clusters[0]).version
    assert first.split("#")[1] == second.split("#")[1]
    assert first.split("#")[0] != second.split("#")[0] or example_tree.version == "test"


def test_manifest_hash_follows_the_sibling(example_tree, example_clusters):
    def config_hash(tree: ConfigTree) -> str:
        deployment = Renderer(tree).render(example_clusters[0]).components[1].manifests[1]
        return deployment.body["spec"]["template"]["metadata"]["annotations"]["config-hash"]

    sibling = "cluster/manifests/example-app/03-config.yaml"
    changed = ConfigTree(
        version="x",
        source="t",
        files={
            **example_tree.files,
            sibling: (
                b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, namespace: example}\ndata: {a: b}\n"
            ),
        },
    )
    assert config_hash(example_tree) != config_hash(changed)


def replaced(base: ConfigTree, files: dict[str, str]) -> ConfigTree:
    """The tree with the files at these paths replaced."""
    return ConfigTree(version="test", files={**base.files, **{p: t.encode() for p, t in files.items()}}, source="t")


def test_a_hashed_template_may_hash_another_but_a_cycle_is_named(example_tree, example_clusters):
    """As CLM's manifestHash: 01 hashes 02, which hashes 03; a template hashing one being rendered is a cycle."""
    app = "cluster/manifests/example-app/"
    namespace = example_tree.files[app + "01-namespace.yaml"].decode()
    hashing = "# {{ manifest_hash('02-workload.yaml') }}\n"
    nested = replaced(example_tree, {app + "01-namespace.yaml": hashing + namespace})
    Renderer(nested).render(example_clusters[0])
    cycle = replaced(nested, {app + "03-config.yaml": "# {{ manifest_hash('01-namespace.yaml') }}\n"})
    error = render_error(cycle, example_clusters[0])
    assert f"manifest_hash of {app}01-namespace.yaml is a cycle: " in error.message
    assert f"01-namespace.yaml -> {app}02-workload.yaml -> {app}03-config.yaml -> {app}01-namespace.yaml" in (
        error.message
    )


def test_a_stack_that_is_an_include_names_the_included_file_at_fault(example_tree, example_clusters):
    """worker-spot's stack is `{% include %}` of worker-default's: a YAML error in what worker-default renders is
    worker-default's, at its own line; one the includer makes around a sound include stays the includer's."""
    default, spot = "cluster/node-pools/worker-default/stack.yaml", "cluster/node-pools/worker-spot/stack.yaml"
    broken = example_tree.files[default].decode().replace("Resources:", "Resources: [", 1)
    error = render_error(replaced(example_tree, {default: broken}), example_clusters[1])
    assert error.file == default and "rendered template is not valid YAML/JSON" in error.message
    assert error.line is not None
    around = "[\n" + example_tree.files[spot].decode()
    assert render_error(replaced(example_tree, {spot: around}), example_clusters[1]).file == spot


def test_empty_documents_are_dropped(example_tree, example_clusters):
    tree = tree_with(
        example_tree,
        cluster__manifests__extra__a_dot_yaml=(
            "---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n"
        ),
    )
    extra = Renderer(tree).render(example_clusters[0]).components[-1]
    assert extra.name == "extra"
    assert [(m.index, m.line) for m in extra.manifests] == [(2, 4)]


def test_template_syntax_error_names_file_and_line(example_tree, example_clusters):
    tree = tree_with(example_tree, cluster__manifests__extra__a_dot_yaml="a: 1\nb: {% if %}\n")
    error = render_error(tree, example_clusters[0])
    assert (error.file, error.line) == ("cluster/manifests/extra/a.yaml", 2)
    assert "template syntax error" in str(error)
    assert "cluster aws:123456789012:eu-central-1:kube-1" in str(error)


def test_undefined_variable_names_file_and_line(example_tree, example_clusters):
    tree = tree_with(
        example_tree,
        cluster__manifests__extra__a_dot_yaml=(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ cluster.config_items.no_such_item }}\n"
        ),
    )
    error = render_error(tree, example_clusters[0])
    assert (error.file, error.line) == ("cluster/manifests/extra/a.yaml", 4)
    assert "no_such_item" in str(error)


def test_document_without_kind_is_named(example_tree, example_clusters):
    tree = tree_with(
        example_tree,
        cluster__manifests__extra__a_dot_yaml=(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\napiVersion: v1\nmetadata: {name: x}\n"
        ),
    )
    error = render_error(tree, example_clusters[0])
    assert str(error).endswith("cluster/manifests/extra/a.yaml:5: document 2: kind is missing")


def test_invalid_rendered_yaml_is_named(example_tree, example_clusters):
    tree = tree_with(example_tree, cluster__manifests__extra__a_dot_yaml="a: [1\nb: 2\n")
    error = render_error(tree, example_clusters[0])
    assert error.file == "cluster/manifests/extra/a.yaml"
    assert "rendered YAML is invalid" in str(error)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{kind: ConfigMap, namespace: a, name: x, labels: {a: b}}", "exactly one of name, selector, labels"),
        ("{kind: ConfigMap, namespace: a}", "exactly one of name, selector, labels (got none)"),
        ("{namespace: a, name: x}", "kind is required"),
        ("{kind: Pod, name: x, has_owner: true}", "has_owner goes with selector or labels"),
        ("{kind: Pod, selector: a=b, propagation_policy: Later}", "propagation_policy 'Later' is not one of"),
        ("{kind: Pod, selector: a=b, grace_period_seconds: -1}", "grace_period_seconds must be an integer >= 0"),
        ("{kind: Pod, name: x, colour: red}", "unknown field 'colour'"),
    ],
)
def test_bad_deletions_entry_is_named(example_tree, example_clusters, entry, message):
    tree = tree_with(
        example_tree,
        cluster__manifests__deletions_dot_yaml=(
            f"pre_apply: []\npost_apply:\n- {{kind: Pod, name: fine}}\n- {entry}\n"
        ),
    )
    error = render_error(tree, example_clusters[0])
    assert (error.file, error.line) == ("cluster/manifests/deletions.yaml", 4)
    assert "post_apply[1]: " in str(error)
    assert message in str(error)


def test_deletions_options_parse(example_tree, example_clusters):
    tree = tree_with(
        example_tree,
        cluster__manifests__deletions_dot_yaml=(
            "pre_apply:\n- {kind: Pod, namespace: a, selector: 'app=x,tier!=db', has_owner: false,\n"
            "   propagation_policy: Foreground, grace_period_seconds: 0}\npost_apply:\n"
        ),
    )
    deletion = Renderer(tree).render(example_clusters[0]).deletions.pre_apply[0]
    assert deletion.to_dict() == {
        "kind": "Pod",
        "namespace": "a",
        "selector": "app=x,tier!=db",
        "has_owner": False,
        "propagation_policy": "Foreground",
        "grace_period_seconds": 0,
    }


def test_missing_profile_names_pool_and_path(example_tree, example_clusters):
    tree = tree_with(example_tree, cluster__node_pools__worker_spot__stack_dot_yaml=None)
    tree = ConfigTree(
        version="t", source="test-tree", files={k: v for k, v in tree.files.items() if "worker-spot" not in k}
    )
    error = render_error(tree, example_clusters[1])
    assert "node pool 'batch' uses profile 'worker-spot', but cluster/node-pools/worker-spot/stack.yaml" in str(error)


def test_cluster_yaml_is_accepted_but_not_both(example_tree, example_clusters):
    files = dict(example_tree.files)
    files["cluster/cluster.yaml"] = files.pop("cluster/stack.yaml")
    renamed = ConfigTree(version="t", files=files, source="t")
    assert Renderer(renamed).render(example_clusters[0]).cluster_stack.file == "cluster/cluster.yaml"
    both = ConfigTree(version="t", files={**files, "cluster/stack.yaml": b"Resources: {}"}, source="t")
    assert "keep one" in str(render_error(both, example_clusters[0]))


def test_stack_without_resources_is_rejected(example_tree, example_clusters):
    tree = tree_with(example_tree, cluster__stack_dot_yaml="Description: nothing\n")
    assert "no Resources section" in str(render_error(tree, example_clusters[0]))


def test_sandbox_blocks_internals(example_tree, example_clusters):
    tree = tree_with(
        example_tree, cluster__manifests__extra__a_dot_yaml=("{{ cluster.__class__.__init__.__globals__ }}\n")
    )
    assert "error" in str(render_error(tree, example_clusters[0]))


def test_functions(example_tree, example_clusters):
    tree = tree_with(
        example_tree,
        cluster__manifests__extra__a_dot_yaml=(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: f}\ndata:\n"
            "  b64: {{ base64('hi') }}\n  back: {{ base64_decode('aGk=') }}\n  filt: {{ 'hi' | base64 }}\n"
            "  sha: {{ sha256('') }}\n  acc: '{{ account_id(cluster.infrastructure_account) }}'\n"
            "  az: {{ az_id('eu-central-1c') }}\n  n: '{{ az_count({'*': 'x', 'a': 'y', 'b': 'z'}) }}'\n"
            "  split: '{{ split('a,b') | length }}-{{ split('') | length }}'\n"
            "  join: {{ join('+', ['a', 'b']) }}\n  int: '{{ parse_int(' 7 ') + 1 }}'\n"
            "  ind: |\n{{ indent(4, 'x\\ny') }}\n"
        ),
    )
    data = Renderer(tree).render(example_clusters[0]).components[-1].manifests[0].body["data"]
    assert data == {
        "b64": "aGk=",
        "back": "hi",
        "filt": "aGk=",
        "sha": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "acc": "123456789012",
        "az": "1c",
        "n": "2",
        "split": "2-0",
        "join": "a+b",
        "int": "8",
        "ind": "x\ny\n",
    }


def test_function_error_names_file(example_tree, example_clusters):
    tree = tree_with(example_tree, cluster__manifests__extra__a_dot_yaml="x: {{ base64_decode('%%%') }}\n")
    error = render_error(tree, example_clusters[0])
    assert error.file == "cluster/manifests/extra/a.yaml"
    assert "not valid base64" in str(error)


def test_cloudformation_short_tags():
    template = load_template("A: !Ref X\nB: !GetAtt R.Arn\nC: !Sub 'x-${Y}'\nD: !Join [',', [a, b]]\n")
    assert template == {
        "A": {"Ref": "X"},
        "B": {"Fn::GetAtt": ["R", "Arn"]},
        "C": {"Fn::Sub": "x-${Y}"},
        "D": {"Fn::Join": [",", ["a", "b"]]},
    }
