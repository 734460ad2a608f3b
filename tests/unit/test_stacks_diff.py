"""stack_diff and launch_changes: what deploying a spec would do, on moto's real CloudFormation state (with the
sandbox's patches), and which template changes make a node pool's instances outdated."""

from __future__ import annotations

import dataclasses
import json

import pytest

from clm.render.cfn_yaml import load_template
from clm.stacks.deploy import check, start
from clm.stacks.diff import MASK, ValueChange, stack_diff, template_texts, unified_diff, value_changes
from clm.stacks.launch import launch_changes
from clm.stacks.names import owned_tags
from clm.stacks.spec import StackSpec, explicit_parameters
from tests.unit.test_stacks_support import clients, moto_stack, record_rollback_failure, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures

POOL_TEMPLATE = """\
Parameters:
  ImageId: {{Type: String}}
  Secret: {{Type: String, NoEcho: true, Default: s3cr3t}}
Resources:
  Vpc:
    Type: AWS::EC2::VPC
    Properties: {{CidrBlock: 10.1.0.0/16}}
  Subnet:
    Type: AWS::EC2::Subnet
    Properties: {{VpcId: !Ref Vpc, CidrBlock: 10.1.0.0/24, AvailabilityZone: eu-central-1b}}
  LaunchTemplate:
    Type: AWS::EC2::LaunchTemplate
    Properties:
      LaunchTemplateName: pool
      LaunchTemplateData: {{ImageId: !Ref ImageId, InstanceType: {instance_type}}}
  AutoScalingGroup:
    Type: AWS::AutoScaling::AutoScalingGroup
    Properties:
      MinSize: "{min_size}"
      MaxSize: "4"
      VPCZoneIdentifier: [!Ref Subnet]
      LaunchTemplate: {{LaunchTemplateId: !Ref LaunchTemplate, Version: !GetAtt LaunchTemplate.LatestVersionNumber}}
"""
JSON_TEMPLATE = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "q1"}}}}


def pool_spec(
    instance_type: str = "m5.large", min_size: int = 1, tags: dict[str, str] | None = None, **parameters: str
) -> StackSpec:
    body = POOL_TEMPLATE.format(instance_type=instance_type, min_size=min_size)
    template = load_template(body)
    return StackSpec(
        cluster_id="c1",
        name="pool",
        body=body,
        template=template,
        tags={**owned_tags("c1"), **(tags or {"team": "platform"})},  # CLM's stack of the cluster, as specs make it
        parameters=explicit_parameters(template, {"ImageId": "ami-1", **parameters}, "c1", "pool"),
        node_pool="workers",
        file="cluster/node-pools/workers/stack.yaml",
    )


def json_spec(queue: str = "q1") -> StackSpec:
    template = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": queue}}}}
    return StackSpec("c1", "queues", json.dumps(template), template, owned_tags("c1"), {})


def deploy(clients, spec: StackSpec) -> None:
    start(clients["cloudformation"], clients["s3"], spec)
    assert check(clients["cloudformation"], spec.name).state == "complete"


def test_missing_stack_is_created(clients):
    assert stack_diff(clients["cloudformation"], pool_spec()).to_dict() == {
        "stack_name": "pool",
        "node_pool": "workers",
        "file": "cluster/node-pools/workers/stack.yaml",
        "action": "create",
        "status": "",
        "template_diff": "",
        "parameters": [],
        "tags": [],
        "launch_changes": [],
        "sets_policy": False,  # only for a stack that exists (a created one gets its policy)
        "problem": "",
    }


def test_deployed_spec_is_no_change(clients):
    deploy(clients, pool_spec())
    diff = stack_diff(clients["cloudformation"], pool_spec())
    assert (diff.action, diff.status, diff.template_diff, diff.parameters, diff.tags, diff.launch_changes) == (
        "no change",
        "CREATE_COMPLETE",
        "",
        [],
        [],
        [],
    )


def test_changed_parameter_is_an_update_that_changes_what_the_group_launches(clients):
    deploy(clients, pool_spec())
    diff = stack_diff(clients["cloudformation"], pool_spec(ImageId="ami-2"))
    assert (diff.action, diff.template_diff, diff.tags) == ("update", "", [])
    assert diff.parameters == [ValueChange("ImageId", "ami-1", "ami-2")]
    assert diff.launch_changes == ["parameter ImageId: ami-1 -> ami-2"]


def test_no_echo_parameter_values_are_never_shown(clients):
    deploy(clients, pool_spec())
    diff = stack_diff(clients["cloudformation"], pool_spec(Secret="an0ther"))
    assert diff.action == "update"
    assert diff.parameters == [ValueChange("Secret", MASK, MASK)]
    assert "an0ther" not in json.dumps(diff.to_dict())
    assert diff.launch_changes == []  # the launch template does not refer to it


def test_changed_template_is_a_unified_diff_deployed_to_rendered(clients):
    deploy(clients, pool_spec())
    diff = stack_diff(clients["cloudformation"], pool_spec(instance_type="m5.xlarge", min_size=2))
    assert diff.action == "update"
    lines = diff.template_diff.splitlines()
    assert lines[:2] == ["--- pool (deployed)", "+++ cluster/node-pools/workers/stack.yaml (rendered)"]
    assert [line for line in lines if line[:1] in "+-" and line[:3] not in ("---", "+++")] == [
        "-      LaunchTemplateData: {ImageId: !Ref ImageId, InstanceType: m5.large}",
        "+      LaunchTemplateData: {ImageId: !Ref ImageId, InstanceType: m5.xlarge}",
        '-      MinSize: "1"',
        '+      MinSize: "2"',
    ]
    # The group's size is no launch change: only the instance type makes instances outdated.
    assert diff.launch_changes == ["LaunchTemplate.LaunchTemplateData.InstanceType: m5.large -> m5.xlarge"]


def test_changed_tags_alone_are_an_update(clients):
    deploy(clients, pool_spec())
    diff = stack_diff(clients["cloudformation"], pool_spec(tags={"team": "data"}))
    assert (diff.action, diff.template_diff, diff.parameters) == ("update", "", [])
    assert diff.tags == [ValueChange("team", "platform", "data")]


def test_json_templates_are_compared_parsed(clients):
    deploy(clients, json_spec())
    assert isinstance(clients["cloudformation"].get_template(StackName="queues")["TemplateBody"], dict)
    assert stack_diff(clients["cloudformation"], json_spec()).action == "no change"
    changed = stack_diff(clients["cloudformation"], json_spec("q2"))
    assert changed.action == "update"
    assert '-        "QueueName": "q1"' in changed.template_diff.splitlines()
    assert '+        "QueueName": "q2"' in changed.template_diff.splitlines()
    assert changed.launch_changes == []  # not a node-pool stack


@pytest.mark.parametrize(
    ("status", "action"),
    [
        ("UPDATE_IN_PROGRESS", "wait"),
        ("ROLLBACK_COMPLETE", "recreate"),
        ("UPDATE_ROLLBACK_COMPLETE", "update"),
        ("DELETE_FAILED", "attention"),
        ("REVIEW_IN_PROGRESS", "attention"),
    ],
)
def test_action_follows_the_stack_status_as_start_does(clients, status, action):
    deploy(clients, pool_spec())
    moto_stack("pool").status = status
    diff = stack_diff(clients["cloudformation"], pool_spec(ImageId="ami-2"))
    assert (diff.action, diff.status, diff.parameters) == (action, status, [ValueChange("ImageId", "ami-1", "ami-2")])


def test_failed_rollback_is_recovered_once_then_needs_attention(clients):
    deploy(clients, pool_spec())
    record_rollback_failure("pool", "LaunchTemplate", "AWS::EC2::LaunchTemplate", "boom")
    assert stack_diff(clients["cloudformation"], pool_spec()).action == "recover"
    record_rollback_failure("pool", "LaunchTemplate", "AWS::EC2::LaunchTemplate", "boom again")
    assert stack_diff(clients["cloudformation"], pool_spec()).action == "attention"


def test_cluster_stack_rolled_back_needs_attention(clients):
    spec = json_spec()
    deploy(clients, spec)
    moto_stack("queues").status = "ROLLBACK_COMPLETE"
    assert stack_diff(clients["cloudformation"], spec).action == "attention"


def test_template_texts_and_unified_diff():
    assert template_texts("a: 1\n", "a: 2\n") == ("a: 1\n", "a: 2\n")
    deployed, rendered = template_texts(JSON_TEMPLATE, json.dumps(JSON_TEMPLATE, indent=None))
    assert deployed == rendered == json.dumps(JSON_TEMPLATE, indent=2, sort_keys=True) + "\n"
    assert template_texts(JSON_TEMPLATE, "Resources: {}\n")[1] == "Resources: {}\n"  # rendered YAML stays text
    assert unified_diff("a\n", "a\n", "s", "f") == ""
    assert unified_diff("a", "b", "s", "f").splitlines() == [
        "--- s (deployed)",
        "+++ f (rendered)",
        "@@ -1 +1 @@",
        "-a",
        "+b",
    ]


def test_value_changes_name_absent_values_and_mask():
    assert value_changes({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "x", "d": "4"}, frozenset({"b"})) == [
        ValueChange("b", MASK, MASK),
        ValueChange("c", "3", None),
        ValueChange("d", None, "4"),
    ]


def group_template(group_properties: dict, template_data: dict | None = None, extra: dict | None = None) -> dict:
    resources = {
        "Group": {"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": {"MinSize": "1", **group_properties}},
        **(extra or {}),
    }
    if template_data is not None:
        resources["Template"] = {
            "Type": "AWS::EC2::LaunchTemplate",
            "Properties": {"LaunchTemplateData": template_data},
        }
    return {"Resources": resources}


def test_launch_changes_of_the_groups_mixed_instances_policy():
    def mixed(types: list[str]) -> dict:
        overrides = [{"InstanceType": t} for t in types]
        return {"MixedInstancesPolicy": {"LaunchTemplate": {"Overrides": overrides}}}

    assert launch_changes(group_template(mixed(["m5.large"])), group_template(mixed(["m5.xlarge"])), {}) == [
        "Group.MixedInstancesPolicy.LaunchTemplate.Overrides[0].InstanceType: m5.large -> m5.xlarge"
    ]
    longer = group_template(mixed(["m5.large", "m5a.large"]))
    assert launch_changes(group_template(mixed(["m5.large"])), longer, {}) == [
        "Group.MixedInstancesPolicy.LaunchTemplate.Overrides: changed"  # too long to show
    ]


def test_launch_changes_of_resources_and_referenced_parameters():
    data = {"ImageId": {"Fn::Sub": "${Ami}"}, "UserData": "x" * 100}
    before = group_template({}, data, {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "a"}}})
    after = group_template(
        {}, {**data, "UserData": "y" * 100}, {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "b"}}}
    )
    changed = {"Ami": ("ami-1", "ami-2"), "Unrelated": ("a", "b")}
    assert launch_changes(before, after, changed) == [
        "Template.LaunchTemplateData.UserData: changed",
        "parameter Ami: ami-1 -> ami-2",
    ]
    assert launch_changes(group_template({}), group_template({}, {"ImageId": "ami-1"}), {}) == ["Template: added"]
    assert launch_changes(group_template({}, {"ImageId": "ami-1"}), group_template({}), {}) == ["Template: removed"]
    assert launch_changes(group_template({}, {}), group_template({}, {"ImageId": "ami-1"}), {}) == [
        "Template.LaunchTemplateData.ImageId: (none) -> ami-1"
    ]
    assert launch_changes(before, before, {}) == []


def test_a_stack_of_the_name_that_is_not_the_clusters_needs_attention_naming_the_missing_tags(clients):
    """As the run: it changes nothing of such a stack and stops (deploy.start raises StackNotOwned)."""
    foreign = dataclasses.replace(pool_spec(), tags={"team": "platform"})
    clients["cloudformation"].create_stack(
        StackName="pool", TemplateBody=foreign.body, Parameters=foreign.api_parameters()
    )
    diff = stack_diff(clients["cloudformation"], pool_spec())
    assert (diff.action, diff.template_diff, diff.tags) == ("attention", "", [])
    assert "not CLM's stack of the cluster" in diff.problem and "kubernetes.io/cluster/c1=owned" in diff.problem
