"""Stack names, tags, explicit parameters, capabilities and how templates travel (inline or S3)."""

from __future__ import annotations

import dataclasses

import pytest

from clm.stacks.errors import InvalidStackSpec, TemplateTooLarge
from clm.stacks.names import node_pool_stack_name
from clm.stacks.spec import cluster_stack_spec, explicit_parameters, node_pool_stack_spec
from clm.stacks.template import INLINE_LIMIT, template_argument
from tests.unit.test_stacks_support import example_cluster, render

CLUSTER_ID = "aws:123456789012:eu-central-1:kube-1"


def test_cluster_stack_is_named_after_local_id_and_tagged_owned():
    spec = cluster_stack_spec(render(example_cluster("kube-1")))
    assert spec.name == "kube-1"
    assert spec.tags == {  # CLM's (provisioner/aws.go applyClusterStack), and clm:managed-by
        f"kubernetes.io/cluster/{CLUSTER_ID}": "owned",
        "cluster-lifecycle-controller.zalando.org/main-stack": "true",
        "clm:managed-by": "clm",
    }
    assert spec.node_pool is None
    assert spec.file == "cluster/stack.yaml"
    assert spec.capabilities == ["CAPABILITY_NAMED_IAM"]
    assert spec.parameters == {}


def test_node_pool_stack_name_and_tags_follow_clm():
    rendered = render(example_cluster("kube-2"))
    spec = node_pool_stack_spec(rendered, "batch")
    assert spec.name == "nodepool-batch-aws-123456789012-eu-central-1-kube-2"
    assert spec.tags == {
        "kubernetes.io/cluster/aws:123456789012:eu-central-1:kube-2": "owned",
        "clm:managed-by": "clm",
        "kubernetes.io/role/node-pool": "true",
        "kubernetes.io/node-pool": "batch",
        "NodePool": "batch",
        "kubernetes.io/node-pool/profile": "worker-spot",
    }  # CLM's (provisioner/node_pools.go provisionNodePool), and clm:managed-by
    assert spec.node_pool == "batch"
    assert spec.api_tags()[:2] == [{"Key": "NodePool", "Value": "batch"}, {"Key": "clm:managed-by", "Value": "clm"}]


def test_node_pool_stack_name_replaces_every_character_cloudformation_forbids():
    assert node_pool_stack_name("team_a.prod:kube-1", "workers") == "nodepool-workers-team-a-prod-kube-1"


def test_node_pool_stack_name_over_128_characters_is_an_error_naming_the_pool():
    with pytest.raises(InvalidStackSpec, match=r"cluster c{100}: .*node pool 'p{40}': stack name is 150 characters"):
        node_pool_stack_name("c" * 100, "p" * 40)


def test_parameters_are_always_explicit_defaults_filled_in():
    template = {
        "Parameters": {
            "Ami": {"Type": "String"},
            "Size": {"Type": "Number", "Default": 3},
            "Spot": {"Type": "String", "Default": False},
            "Zones": {"Type": "CommaDelimitedList", "Default": ["a", "b"]},
        }
    }
    assert explicit_parameters(template, {"Ami": "ami-1"}, "c1", "s1") == {
        "Ami": "ami-1",
        "Size": "3",
        "Spot": "false",
        "Zones": "a,b",
    }


def test_missing_and_unknown_parameters_are_errors_naming_them():
    template = {"Parameters": {"Ami": {"Type": "String"}}}
    with pytest.raises(InvalidStackSpec, match="cluster c1: stack s1: template parameter Ami has no default"):
        explicit_parameters(template, {}, "c1", "s1")
    with pytest.raises(InvalidStackSpec, match="stack s1: parameters Other are not declared in the template"):
        explicit_parameters(template, {"Ami": "x", "Other": "y"}, "c1", "s1")


def test_given_parameters_reach_the_spec():
    rendered = render(example_cluster("kube-1"))
    stack = dataclasses.replace(
        rendered.cluster_stack, template={**rendered.cluster_stack.template, "Parameters": {"Env": {"Type": "String"}}}
    )
    spec = cluster_stack_spec(dataclasses.replace(rendered, cluster_stack=stack), {"Env": "test"})
    assert spec.api_parameters() == [{"ParameterKey": "Env", "ParameterValue": "test"}]


def test_a_transform_adds_auto_expand():
    rendered = render(example_cluster("kube-1"))
    for template in (
        {**rendered.cluster_stack.template, "Transform": "AWS::Serverless-2016-10-31"},
        {"Resources": {"X": {"Type": "AWS::SQS::Queue", "Properties": {"Fn::Transform": {"Name": "AWS::Include"}}}}},
    ):
        spec = dataclasses.replace(cluster_stack_spec(rendered), template=template)
        assert spec.capabilities == ["CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]


def test_a_large_template_without_bucket_is_an_error_with_its_size():
    spec = dataclasses.replace(cluster_stack_spec(render(example_cluster("kube-1"))), body="x" * (INLINE_LIMIT + 1))
    with pytest.raises(TemplateTooLarge, match=f"stack kube-1: template is {INLINE_LIMIT + 1} bytes"):
        template_argument(None, spec, None)


def test_a_template_at_the_limit_stays_inline():
    spec = dataclasses.replace(cluster_stack_spec(render(example_cluster("kube-1"))), body="é" * (INLINE_LIMIT // 2))
    assert template_argument(None, spec, None) == {"TemplateBody": spec.body}


def test_template_metadata_tags_go_on_the_stack_under_clms_own():
    """CLM merges the template's Metadata.Tags into the stack's tags, its own winning (provisioner/aws.go
    applyStack); Zalando's stack templates carry such tags, so an update must keep them."""
    rendered = render(example_cluster("kube-2"))
    stack = rendered.node_pool_stacks["batch"]
    metadata = {"Tags": {"application": "kubernetes", "InfrastructureComponent": True, "NodePool": "spoofed"}}
    tagged = dataclasses.replace(stack, template={**stack.template, "Metadata": metadata})
    rendered.node_pool_stacks["batch"] = tagged
    tags = node_pool_stack_spec(rendered, "batch").tags
    assert tags["application"] == "kubernetes" and tags["InfrastructureComponent"] == "true"
    assert tags["NodePool"] == "batch"
