"""CLM's etcd stack (clm.render.etcd, clm.stacks.etcd): rendered only when the deployment manages it for zalando-aws
clusters with cluster/etcd/stack.yaml, its files' archive at CLM's key (stored before the stack's values name it), a
broken template failing the render with file and line, stored and loaded with the rendering, the stage before the
cluster stack; the stack's name, tags, owner tags and policy on moto's CloudFormation (created with it, set when an
existing stack lacks it, refused without the owner tags)."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import boto3
import pytest

from clm.errors import RenderError
from clm.render import stored
from clm.render.inputs import RenderInputs
from clm.render.lookups import Ec2Lookups
from clm.render.node_files import NodeFile, PlannedFiles
from clm.render.renderer import Renderer
from clm.stacks.deploy import start
from clm.stacks.errors import StackNotOwned
from clm.stacks.etcd import ETCD_STACK_NAME, STACK_POLICY, etcd_stack_spec
from clm.workflow.render_step import stack_stages

STACK = """Metadata:
  Tags: {application: other, team: etcd}
Resources:
  Group:
    Type: AWS::EC2::SecurityGroup
    Properties:
      GroupDescription: "{{ values.S3GeneratedFilesPath }} {{ values.get('ClusterStackOutputs', 'none') }}"
"""
PROTECTED = ["AWS::AutoScaling::AutoScalingGroup", "AWS::S3::Bucket", "AWS::IAM::Role"]
FILES = "files:\n- path: /etc/etcd/key\n  data: {{ cluster.local_id | base64 }}\n  encrypted: true\n"


def etcd_tree(example_tree, **extra: bytes):
    files = {**example_tree.files, "cluster/etcd/stack.yaml": STACK.encode(), "cluster/etcd/files.yaml": FILES.encode()}
    return type(example_tree)(example_tree.version, {**files, **extra}, example_tree.source)


class Recorded(PlannedFiles):
    """PlannedFiles that remembers what it was given."""

    def __call__(self, key, files, kms_key):  # type: ignore[no-untyped-def]
        self.__dict__.setdefault("calls", []).append((key, files, kms_key()))
        return super().__call__(key, files, kms_key)


def test_the_etcd_stack_renders_only_when_managed_for_zalando_aws_with_its_archive_path(
    example_tree, example_clusters
) -> None:
    tree, cluster = etcd_tree(example_tree), example_clusters[0]
    store = Recorded("node-files")
    rendered = Renderer(tree, RenderInputs(etcd_store=store)).render(cluster, {"ClusterStackOutputs": {"X": "y"}})
    digest = hashlib.sha512(FILES.replace("{{ cluster.local_id | base64 }}", "a3ViZS0x").encode()).hexdigest()
    [(key, files, kms_key)] = store.calls  # type: ignore[attr-defined]
    assert key == f"kube-1/etcd/{digest}.userdata" and kms_key == "alias/etcd-cluster"
    assert files == [NodeFile("/etc/etcd/key", b"kube-1", True, 0)]
    assert rendered.etcd_stack is not None and rendered.etcd_stack.file == "cluster/etcd/stack.yaml"
    description = rendered.etcd_stack.template["Resources"]["Group"]["Properties"]["GroupDescription"]
    assert description == f"s3://node-files/{key} none"  # values copied without the cluster stack's outputs
    assert stored.loads(stored.dumps(rendered)).etcd_stack == rendered.etcd_stack
    assert Renderer(tree).render(cluster).etcd_stack is None  # the setting off
    eks, managed = dataclasses.replace(cluster, provider="zalando-eks"), RenderInputs(etcd_store=store)
    assert Renderer(tree, managed).render(eks).etcd_stack is None  # CLM's EKS provisioner has none
    assert Renderer(example_tree, managed).render(cluster).etcd_stack is None  # no etcd/stack.yaml


def test_clms_taupage_era_etcd_values_fail_naming_what_to_read_instead(example_tree, example_clusters) -> None:
    """CLM's populateEncryptedEtcdValues is not provided: a template reading one fails at its line, with the reason."""
    stack = STACK.replace("{{ values.S3GeneratedFilesPath }}", "{{ values.etcd_client_server_key }}").encode()
    tree = etcd_tree(example_tree, **{"cluster/etcd/stack.yaml": stack})
    with pytest.raises(RenderError, match=r"cluster/etcd/stack\.yaml:7") as info:
        Renderer(tree, RenderInputs(etcd_store=PlannedFiles("b"))).render(example_clusters[0])
    assert "populateEncryptedEtcdValues" in str(info.value)
    assert "cluster.config_items.etcd_client_server_key in cluster/etcd/files.yaml" in str(info.value)


@pytest.mark.parametrize(
    ("path", "text", "where"),
    [
        ("cluster/etcd/stack.yaml", b"Resources:\n  A: {{ cluster.nope }}\n", "cluster/etcd/stack.yaml:2"),
        ("cluster/etcd/stack.yaml", b"Resources:\n  A: [\n", "cluster/etcd/stack.yaml:3"),
        ("cluster/etcd/files.yaml", b"files:\n- path: /a\n  mode: 1\n", "cluster/etcd/files.yaml:3"),
    ],
)
def test_a_broken_etcd_template_fails_the_render_naming_file_and_line(
    example_tree, example_clusters, path: str, text: bytes, where: str
) -> None:
    tree = etcd_tree(example_tree, **{path: text})
    with pytest.raises(RenderError, match=where):
        Renderer(tree, RenderInputs(etcd_store=PlannedFiles("b"))).render(example_clusters[0])


def test_the_etcd_stage_comes_before_the_cluster_stack(example_clusters) -> None:
    cluster = example_clusters[0]
    stages = stack_stages(cluster, ["default-worker"], etcd=True)
    assert stages[0] == {"stacks": [{"node_pool": "", "etcd": True}], "wait_for_api_server": False, "etcd": True}
    assert stages[1]["stacks"] == [{"node_pool": ""}] and "etcd" not in stages[1]
    assert stack_stages(cluster, ["default-worker"]) == stages[1:]


def etcd_spec(example_tree, cluster):  # type: ignore[no-untyped-def]
    return etcd_stack_spec(
        Renderer(etcd_tree(example_tree), RenderInputs(etcd_store=PlannedFiles("b"))).render(cluster)
    )


def test_the_spec_has_clms_name_tags_over_the_templates_owner_tags_and_policy(example_tree, example_clusters) -> None:
    spec = etcd_spec(example_tree, example_clusters[0])
    assert spec.name == ETCD_STACK_NAME == "etcd-cluster-etcd"
    assert spec.tags == {
        "application": "kubernetes",
        "component": "etcd-cluster",
        "team": "etcd",
        "clm:managed-by": "clm",
        "clm:etcd-cluster": example_clusters[0].id,
    }
    assert json.loads(spec.policy)["Statement"][1] == {
        "Effect": "Deny",
        "Action": ["Update:Replace", "Update:Delete"],
        "Principal": "*",
        "Condition": {"StringEquals": {"ResourceType": PROTECTED}},
    }


def test_on_cloudformation_the_policy_is_set_at_create_and_on_a_stack_lacking_it_and_owners_are_checked(
    aws: boto3.Session, example_tree, example_clusters
) -> None:
    cfn, s3 = aws.client("cloudformation"), aws.client("s3")
    spec = etcd_spec(example_tree, example_clusters[0])
    assert start(cfn, s3, spec).action == "created"
    assert cfn.get_stack_policy(StackName=ETCD_STACK_NAME)["StackPolicyBody"] == STACK_POLICY
    assert start(cfn, s3, spec).action == "unchanged"

    cfn.set_stack_policy(StackName=ETCD_STACK_NAME, StackPolicyBody='{"Statement": []}')  # e.g. Zalando CLM's stack
    assert start(cfn, s3, spec).action == "unchanged"  # nothing to update: the policy alone is set again
    assert json.loads(cfn.get_stack_policy(StackName=ETCD_STACK_NAME)["StackPolicyBody"]) == json.loads(STACK_POLICY)

    other = dataclasses.replace(example_clusters[0], id="aws:123456789012:eu-central-1:kube-2", local_id="kube-2")
    with pytest.raises(StackNotOwned, match="clm:etcd-cluster=aws:123456789012:eu-central-1:kube-2"):
        start(cfn, s3, etcd_spec(example_tree, other))  # another cluster's etcd stack is left alone


def test_the_etcd_stack_sees_the_etcd_instance_types_info(example_tree, example_clusters, aws: boto3.Session) -> None:
    """clusterpy.go createOrUpdateEtcdStack: `values.etcd_instance_type_info` is InstanceInfo of the config item
    `etcd_instance_type` (moto's EC2 describes it); without the item, reading it fails naming the item."""
    stack = STACK.replace(
        "{{ values.S3GeneratedFilesPath }}",
        "{{ values.etcd_instance_type_info.VCPU }}/{{ values.etcd_instance_type_info.Memory }}",
    )
    tree = etcd_tree(example_tree, **{"cluster/etcd/stack.yaml": stack.encode()})
    inputs = RenderInputs(lookups=Ec2Lookups(lambda: aws.client("ec2")), etcd_store=PlannedFiles("b"))
    cluster = example_clusters[0]
    typed = dataclasses.replace(cluster, config_items={**cluster.config_items, "etcd_instance_type": "m5.large"})
    rendered = Renderer(tree, inputs).render(typed).etcd_stack
    assert rendered is not None
    assert rendered.template["Resources"]["Group"]["Properties"]["GroupDescription"] == f"2/{8 * 2**30} none"
    untyped = dataclasses.replace(cluster, config_items={k: v for k, v in cluster.config_items.items()
                                                         if k != "etcd_instance_type"})  # fmt: skip
    with pytest.raises(RenderError, match=r"cluster/etcd/stack\.yaml:7: .*no config item etcd_instance_type"):
        Renderer(tree, inputs).render(untyped)
    unknown = dataclasses.replace(cluster, config_items={**cluster.config_items, "etcd_instance_type": "x9.huge"})
    with pytest.raises(RenderError, match=r"etcd_instance_type 'x9\.huge': unknown instance type: x9\.huge"):
        Renderer(tree, inputs).render(unknown)
