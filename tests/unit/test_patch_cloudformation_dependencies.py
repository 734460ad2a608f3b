"""Template references, deployment order and the reference errors CloudFormation refuses templates for."""

from __future__ import annotations

import pytest

from clm_sandbox.patches.cloudformation_dependencies import TemplateError, check, deployment_order, references

VPC = {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}}


def subnet(vpc: str = "Vpc") -> dict:
    return {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": vpc}}}


def test_references_through_ref_getatt_and_sub() -> None:
    node = {
        "A": {"Ref": "Vpc"},
        "B": {"Fn::GetAtt": ["Template", "LatestVersionNumber"]},
        "C": {"Fn::GetAtt": "Role.Arn"},
        "D": {"Fn::Sub": "${Bucket.Arn}/${Prefix}/${AWS::Region}/${!Literal}"},
        "E": {"Fn::Sub": ["${Local}-${Queue}", {"Local": {"Ref": "Name"}}]},
        "F": [{"Fn::Join": [",", [{"Ref": "Subnet"}]]}],
    }
    assert references(node) == {"Vpc", "Template", "Role", "Bucket", "Prefix", "AWS::Region", "Queue", "Name", "Subnet"}


def test_deployment_order_puts_dependencies_first_and_keeps_template_order_otherwise() -> None:
    resources = {
        "Group": {"Type": "G", "Properties": {"Version": {"Fn::GetAtt": ["Template", "LatestVersionNumber"]}}},
        "Queue": {"Type": "Q"},
        "Template": {"Type": "T", "DependsOn": "Queue"},
        "Subnet": subnet(),
        "Vpc": VPC,
    }
    assert deployment_order(resources) == ["Queue", "Vpc", "Template", "Subnet", "Group"]


@pytest.mark.parametrize(
    ("template", "parameters", "message"),
    [
        ({"Resources": {"S": subnet("Nothing")}}, [], r"Unresolved resource dependencies \[Nothing\] in the Resources"),
        (
            {"Resources": {"Vpc": VPC}, "Outputs": {"O": {"Value": {"Fn::Sub": "${Gone}"}}}},
            [],
            r"Unresolved resource dependencies \[Gone\] in the Outputs block",
        ),
        (
            {"Resources": {"Vpc": VPC}, "Outputs": {"O": {"Value": {"Fn::GetAtt": ["Missing", "Arn"]}}}},
            [],
            "Fn::GetAtt references undefined resource Missing",
        ),
        ({"Resources": {"Vpc": {**VPC, "DependsOn": ["Ghost"]}}}, [], r"dependencies \[Ghost\]"),
        (
            {"Resources": {"A": {"Type": "X", "DependsOn": "B"}, "B": subnet("A"), "C": VPC}},
            [],
            r"^Circular dependency between resources: \[A, B\]$",
        ),
        ({"Parameters": {"Ami": {"Type": "String"}}, "Resources": {"Vpc": VPC}}, [], r"Parameters: \[Ami\] must have"),
        ({"Resources": {"Vpc": VPC}}, ["Extra"], r"Parameters: \[Extra\] do not exist in the template"),
    ],
)
def test_check_refuses_what_cloudformation_refuses(template: dict, parameters: list[str], message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        check(template, parameters)


def test_check_accepts_parameters_pseudo_parameters_and_defaults() -> None:
    template = {
        "Parameters": {"Cidr": {"Type": "String", "Default": "10.0.0.0/16"}, "Name": {"Type": "String"}},
        "Resources": {
            "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": {"Ref": "Cidr"}}},
            "Subnet": {
                **subnet(),
                "Properties": {"VpcId": {"Ref": "Vpc"}, "Name": {"Fn::Sub": "${Name}-${AWS::StackName}"}},
            },
        },
        "Outputs": {"Vpc": {"Value": {"Ref": "Vpc"}}},
    }
    check(template, ["Name"])
