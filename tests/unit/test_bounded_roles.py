"""Roles and instance profiles the ClusterStackRole would refuse (clm.render.bounded_roles): named as render
warnings with file and logical id, before any CloudFormation call; the examples' (under CLM's path, with its
boundary) are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from clm.config.local import LocalSource
from clm.registry.clusters_yaml import load_clusters
from clm.render.bounded_roles import unbounded_roles
from clm.render.renderer import Renderer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PATH = {"Fn::ImportValue": "clm-cluster-role-path"}
BOUNDARY = {"Fn::ImportValue": "clm-cluster-role-boundary"}


def test_a_role_without_boundary_or_path_and_a_profile_without_path_are_named():
    template = {
        "Resources": {
            "Bare": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {}}},
            "PathOnly": {"Type": "AWS::IAM::Role", "Properties": {"Path": "/"}},
            "Bounded": {"Type": "AWS::IAM::Role", "Properties": {"Path": PATH, "PermissionsBoundary": BOUNDARY}},
            "Profile": {"Type": "AWS::IAM::InstanceProfile", "Properties": {"Roles": [{"Ref": "Bounded"}]}},
            "PathedProfile": {"Type": "AWS::IAM::InstanceProfile", "Properties": {"Path": PATH}},
            "Queue": {"Type": "AWS::SQS::Queue"},
        }
    }
    warnings = unbounded_roles("cluster/stack.yaml", template)
    assert [w.removeprefix("cluster/stack.yaml: ").split(": ", 1)[0] for w in warnings] == [
        "AWS::IAM::Role Bare has no Path and no PermissionsBoundary",
        "AWS::IAM::Role PathOnly has no PermissionsBoundary",
        "AWS::IAM::InstanceProfile Profile has no Path",
    ]
    assert "`PermissionsBoundary: !ImportValue clm-cluster-role-boundary`" in warnings[0]
    assert "boundary" not in warnings[2].split("(docs")[0]  # a profile has a path only


@pytest.mark.parametrize("example", ["config", "eks"])
def test_the_examples_roles_render_without_a_warning(example):
    folder = EXAMPLES if example == "config" else EXAMPLES / "eks"
    tree = LocalSource(str(folder / "config")).fetch()
    for cluster in load_clusters((folder / "clusters.yaml").read_text()):
        rendered = Renderer(tree).render(cluster)
        assert any(r["Type"] == "AWS::IAM::Role" for s in rendered.stacks for r in s.template["Resources"].values())
        assert rendered.warnings == []
