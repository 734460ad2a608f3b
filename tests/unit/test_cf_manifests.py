"""cluster/cf-manifests/ and cf-deletions.yaml (clm.render.cf_manifests, clm.stacks.extra), as CLM's
applyCFManifests, parseCFDeletions and CFDeletions (provisioner/clusterpy.go; aws.go applyCFManifest;
channel/simple_config.go CFManifests): the templates in file order, empty ones skipped, named by Metadata.StackName;
every problem a RenderError naming cluster, file and line; the names of the cluster's own stacks refused; the stages
and apply phases of a run; on moto's CloudFormation, only the extra stacks CLM made for the cluster are updated or
deleted (another cluster's stack, the cluster's own stack, anyone's stack of that name are refused, unchanged)."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest

from clm.errors import RenderError
from clm.render import stored
from clm.render.artefacts import rendered_files, summary
from clm.render.cf_manifests import CFDeletions
from clm.render.renderer import Renderer
from clm.stacks.deploy import start
from clm.stacks.errors import StackFailed, StackNotOwned
from clm.stacks.extra import delete_in_order, extra_stack_spec, extra_stack_tags
from clm.stacks.ingress import sweep_ingress_stacks
from clm.stacks.names import cluster_stack_tags, owned_tags
from clm.stacks.plan import cf_deletion_diffs
from clm.workflow.render_step import apply_phases, stack_stages
from tests.unit.test_stacks_support import clients, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures

CLUSTER_ID = "aws:123456789012:eu-central-1:kube-1"
OTHER_ID = "aws:123456789012:eu-central-1:kube-2"
DIR = "cluster/cf-manifests/"
QUEUE = """Metadata:
  StackName: {name}
  Tags: {{team: platform}}
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: "{{{{ cluster.local_id }}}}-{name}"
"""
DELETIONS = """pre_apply:
- stackName: old-queue
post_apply:
- stackName: older-queue
"""


def tree_with(example_tree: Any, **files: str) -> Any:
    """examples/config with `files` (name under cluster/cf-manifests/ -> text) added."""
    added = {DIR + name: text.encode() for name, text in files.items()}
    return type(example_tree)(example_tree.version, {**example_tree.files, **added}, example_tree.source)


def render(example_tree: Any, cluster: Any, **files: str) -> Any:
    return Renderer(tree_with(example_tree, **files)).render(cluster)


def test_templates_render_in_file_order_empty_ones_skipped_and_deletions_parsed(example_tree, example_clusters):
    rendered = render(
        example_tree,
        example_clusters[0],
        **{
            "20-queue.yaml": QUEUE.format(name="kube-1-queue"),
            "10-topic.yml": QUEUE.format(name="kube-1-first"),
            "30-empty.yaml": "# nothing here for this cluster\n\n{% if false %}x: 1{% endif %}\n",
            "README.md": "not a template",
            "sub/ignored.yaml": "not: [read",
            "cf-deletions.yaml": DELETIONS,
        },
    )
    assert [s.file for s in rendered.extra_stacks] == [DIR + "10-topic.yml", DIR + "20-queue.yaml"]
    assert rendered.extra_stacks[1].template["Resources"]["Queue"]["Properties"]["QueueName"] == "kube-1-kube-1-queue"
    assert rendered.cf_deletions == CFDeletions(["old-queue"], ["older-queue"])
    assert stored.loads(stored.dumps(rendered)).extra_stacks == rendered.extra_stacks
    assert stored.loads(stored.dumps(rendered)).cf_deletions == rendered.cf_deletions
    files = rendered_files(rendered)
    assert files["cf-stacks/01-kube-1-first.yaml"] == rendered.extra_stacks[0].body
    assert "cf-deletions.yaml" in files
    facts = summary(rendered)
    assert facts["cf_stacks"] == ["kube-1-first", "kube-1-queue"]
    assert facts["cf_deletions"] == {
        "pre_apply": [{"stackName": "old-queue"}],
        "post_apply": [{"stackName": "older-queue"}],
    }
    plain = Renderer(example_tree).render(example_clusters[0])
    assert (plain.extra_stacks, plain.cf_deletions, "cf-deletions.yaml" in rendered_files(plain)) == (
        [],
        CFDeletions(),
        False,
    )


DEL = "cf-deletions.yaml"
BROKEN = {
    "no StackName": ("a.yaml", "Resources: {Q: {Type: AWS::SQS::Queue}}", r": a cf-manifests template needs"),
    "bad name": ("a.yaml", QUEUE.format(name="1st_q"), r":2: Metadata\.StackName '1st_q' is not a stack"),
    "not YAML": ("a.yaml", "Metadata:\n  StackName: x\nResources: [\n", r":4: rendered template is not"),
    "no Resources": ("a.yaml", "Metadata:\n  StackName: x\n", r": rendered template has no Resources"),
    "cluster stack": ("a.yaml", QUEUE.format(name="kube-1"), r":2: stack 'kube-1' is the cluster stack"),
    "etcd stack": ("a.yaml", QUEUE.format(name="etcd-cluster-etcd"), r":2: stack 'etcd-cluster-etcd' is CLM's"),
    "node-pool stack": ("a.yaml", QUEUE.format(name="nodepool-x-kube-2"), r":2: stack 'nodepool-x-kube-2' is a"),
    "deleting the cluster stack": (DEL, "post_apply:\n- stackName: kube-1\n", r":2: stack 'kube-1' is the"),
    "deletion entry": (
        DEL,
        "pre_apply:\n- stackName: a\n- {stackName: b, x: y}\n",
        r":3: pre_apply\[1\]: unknown",
    ),
    "deletion name": (DEL, "pre_apply:\n- stackName: '*'\n", r":2: pre_apply\[0\]: stackName '\*' is not"),
    "deletion key": (DEL, "pre_apply: []\nalways: []\n", r":2: unknown key 'always'"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_file_fails_the_render_naming_cluster_file_and_line(example_tree, example_clusters, case):
    name, text, message = BROKEN[case]
    with pytest.raises(RenderError, match=f"cluster {CLUSTER_ID}: {DIR}{re.escape(name)}{message}"):
        render(example_tree, example_clusters[0], **{name: text})


def test_a_name_twice_applied_and_deleted_or_the_etcd_stack_item_is_refused(example_tree, example_clusters):
    cluster = example_clusters[0]
    twice = {"a.yaml": QUEUE.format(name="q"), "b.yaml": QUEUE.format(name="q")}
    with pytest.raises(RenderError, match=rf"{DIR}b\.yaml:2: stack 'q' is also the StackName of {DIR}a\.yaml:2"):
        render(example_tree, cluster, **twice)
    both = {"a.yaml": QUEUE.format(name="q"), "cf-deletions.yaml": "post_apply:\n- stackName: q\n"}
    with pytest.raises(RenderError, match=rf"cf-deletions\.yaml:2: stack 'q' is deleted here and applied by {DIR}a"):
        render(example_tree, cluster, **both)
    etcd = dataclasses.replace(cluster, config_items={**cluster.config_items, "etcd_stack_name": "my-etcd"})
    with pytest.raises(RenderError, match="stack 'my-etcd' is CLM's etcd stack \\(config item etcd_stack_name\\)"):
        render(example_tree, etcd, **{"a.yaml": QUEUE.format(name="my-etcd")})


def test_the_extra_stacks_are_stages_after_the_cluster_stack_and_cf_deletions_phases_around_the_manifests(
    example_clusters,
):
    stages = stack_stages(example_clusters[0], ["default-worker"], extra=["a", "b"], render_extra=True)
    assert [stage["stacks"] for stage in stages[:3]] == [
        [{"node_pool": ""}],
        [{"node_pool": "", "cf_manifest": "a"}],
        [{"node_pool": "", "cf_manifest": "b"}],
    ]
    assert stages[1]["render_node_pools"] is True and stages[3]["stacks"] == [{"node_pool": "default-worker"}]
    assert apply_phases([], []) == ["pre_apply", "manifests", "post_apply", "karpenter_pools"]
    assert apply_phases(["x"], ["y"]) == [
        "pre_apply",
        "cf_pre_apply",
        "manifests",
        "post_apply",
        "cf_post_apply",
        "karpenter_pools",
    ]


def put_stack(cfn: Any, name: str, tags: dict[str, str]) -> None:
    body = "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n"
    cfn.create_stack(StackName=name, TemplateBody=body, Tags=[{"Key": k, "Value": v} for k, v in tags.items()])


def tags_of(cfn: Any, name: str) -> dict[str, str]:
    [stack] = cfn.describe_stacks(StackName=name)["Stacks"]
    return {tag["Key"]: tag["Value"] for tag in stack["Tags"]}


def test_an_extra_stack_is_created_with_its_tags_and_a_stack_of_that_name_not_made_for_it_is_refused(
    clients, example_tree, example_clusters
):
    cfn, s3 = clients["cloudformation"], clients["s3"]
    rendered = render(example_tree, example_clusters[0], **{"a.yaml": QUEUE.format(name="shared")})
    spec = extra_stack_spec(rendered, "shared")
    assert start(cfn, s3, spec).action == "created"
    assert tags_of(cfn, "shared") == {"team": "platform", **extra_stack_tags(CLUSTER_ID)}
    assert cfn.describe_stacks(StackName="shared")["Stacks"][0]["EnableTerminationProtection"]
    for name, tags in {
        "other-clusters": extra_stack_tags(OTHER_ID),
        "node-pool-like": owned_tags(CLUSTER_ID),  # the cluster's, but not made from cf-manifests
        "hub": {"aws:cloudformation:stack-name": "Clm"},
    }.items():
        put_stack(cfn, name, tags)
        taken = dataclasses.replace(spec, name=name)
        with pytest.raises(StackNotOwned, match=f"stack {name}: the stack of this name is not CLM's"):
            start(cfn, s3, taken)
        assert tags_of(cfn, name) == tags


def test_cf_deletions_delete_only_the_clusters_extra_stacks_one_after_the_other(clients, example_clusters):
    cfn, cluster = clients["cloudformation"], example_clusters[0]
    put_stack(cfn, "mine-1", extra_stack_tags(CLUSTER_ID))
    put_stack(cfn, "mine-2", extra_stack_tags(CLUSTER_ID))
    progress = delete_in_order(cfn, cluster, ["gone", "mine-1", "mine-2"], None)
    assert progress.deleting in ("mine-1", "")  # moto deletes at once; CloudFormation would be DELETE_IN_PROGRESS
    while not progress.done:
        progress = delete_in_order(cfn, cluster, ["gone", "mine-1", "mine-2"], None)
    assert not [s for s in cfn.describe_stacks()["Stacks"] if s["StackName"].startswith("mine")]
    for name, tags in {
        "cluster-stack": cluster_stack_tags(CLUSTER_ID),
        "others": extra_stack_tags(OTHER_ID),
        "foreign": {"team": "data"},
    }.items():
        put_stack(cfn, name, tags)
        with pytest.raises(StackNotOwned, match=name):
            delete_in_order(cfn, cluster, [name], None)
        assert cfn.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    plan = cf_deletion_diffs(cfn, cluster, ["absent", "foreign"])
    assert [(d.stack_name, d.action) for d in plan] == [("foreign", "attention")] and "clm:managed-by" in plan[
        0
    ].problem


def test_a_failed_deletion_is_retried_once_then_names_the_stack(clients, monkeypatch, example_clusters):
    cfn, cluster = clients["cloudformation"], example_clusters[0]
    put_stack(cfn, "mine", extra_stack_tags(CLUSTER_ID))
    failed = {**cfn.describe_stacks(StackName="mine")["Stacks"][0], "StackStatus": "DELETE_FAILED"}
    monkeypatch.setattr("clm.stacks.extra.describe_stack", lambda _cfn, name: failed)
    monkeypatch.setattr("clm.stacks.extra.start_delete", lambda *a, **k: type("R", (), {"action": "delete_started"}))
    first = delete_in_order(cfn, cluster, ["mine"], None)
    assert (first.deleting, first.retried) == ("mine", ("mine",))
    with pytest.raises(StackFailed, match="mine"):
        delete_in_order(cfn, cluster, ["mine"], None, first.retried)


def test_decommission_deletes_the_clusters_extra_stacks_with_the_ingress_controllers(clients, example_clusters):
    cfn = clients["cloudformation"]
    put_stack(cfn, "mine", extra_stack_tags(CLUSTER_ID))
    put_stack(cfn, "kube-1", cluster_stack_tags(CLUSTER_ID))
    put_stack(cfn, "others", extra_stack_tags(OTHER_ID))
    sweep = sweep_ingress_stacks(cfn, example_clusters[0], None, check=False)
    assert sweep.left == []
    live = {s["StackName"] for s in cfn.describe_stacks()["Stacks"] if s["StackStatus"] != "DELETE_COMPLETE"}
    assert {"kube-1", "others"} <= live and "mine" not in live


def test_a_combined_snapshots_cf_manifests_all_count_named_by_source(example_tree, example_clusters):
    from clm.config.tree import ConfigTree, Layer

    main = tree_with(example_tree, **{"a.yaml": QUEUE.format(name="from-main")})
    extra = ConfigTree(main.version, {DIR + "a.yaml": QUEUE.format(name="from-extra").encode()}, "extra")
    combined = dataclasses.replace(main, layers=(Layer("main", main), Layer("extra", extra)))
    rendered = Renderer(combined).render(example_clusters[0])
    assert [s.file for s in rendered.extra_stacks] == [f"main/{DIR}a.yaml", f"extra/{DIR}a.yaml"]
    assert json.loads(json.dumps(summary(rendered)))["cf_stacks"] == ["from-main", "from-extra"]
