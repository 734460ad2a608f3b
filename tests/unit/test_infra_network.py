"""Lambdas in a VPC (context clm:vpcId, clm:subnetIds): each function's own role lets Lambda manage the function's
network interfaces (CreateFunction fails without), and only then."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.iam_actions import allowing
from tests.unit.test_infra import DEFAULTS, resources, synthesized

INTERFACE_ACTIONS = {
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
}
VPC = {"clm:vpcId": "vpc-0123456789abcdef0", "clm:subnetIds": "subnet-0123456789abcdef0"}


@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """The raw templates without and with the VPC option (cdk-nag findings would fail the synthesis)."""
    return {
        name: synthesized(context, tmp_path_factory.mktemp(f"cdk-network-{name}"))[1]
        for name, context in (("default", DEFAULTS), ("vpc", {**DEFAULTS, **VPC}))
    }


def role_statements(raw: dict[str, Any], role: str) -> list[dict[str, Any]]:
    """The statements of every inline policy attached to the role."""
    return [
        statement
        for body in resources(raw, "AWS::IAM::Policy").values()
        if {"Ref": role} in body["Properties"]["Roles"]
        for statement in body["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_every_function_in_the_vpc_may_manage_its_network_interfaces(templates):
    raw = templates["vpc"]
    functions = resources(raw, "AWS::Lambda::Function")
    in_vpc = {name: body for name, body in functions.items() if "VpcConfig" in body["Properties"]}
    assert len(in_vpc) == 6, "CLM's six functions are placed in the VPC"
    for name, body in in_vpc.items():
        role = body["Properties"]["Role"]["Fn::GetAtt"][0]
        statements = role_statements(raw, role)
        missing = [action for action in sorted(INTERFACE_ACTIONS) if not allowing(statements, action)]
        assert missing == [], f"function {name} (role {role}) may not {missing}: Lambda refuses CreateFunction"
        describes = allowing(statements, "ec2:DescribeNetworkInterfaces")  # the stacks function's decommission too
        assert any(d["Resource"] == "*" for d in describes)  # the Lambda guide: it works only on all resources
        [create] = allowing(statements, "ec2:CreateNetworkInterface")
        assert "Condition" not in create  # conditions make Lambda's check at CreateFunction fail
        assert {part["Fn::Join"][1][-1] for part in create["Resource"]} == {
            ":network-interface/*",
            ":subnet/*",
            ":security-group/*",
        }
        policies = [
            n for n, b in resources(raw, "AWS::IAM::Policy").items() if {"Ref": role} in b["Properties"]["Roles"]
        ]
        assert set(policies) <= set(body["DependsOn"]), f"function {name} is created before its role's policy"


def test_functions_outside_a_vpc_get_no_network_interface_rights(templates):
    """Save the stacks function's decommission clean-up: it finds the VPC CNI's leaked interfaces and deletes only
    those tagged as the CNI tags them (clm.stacks.leftovers)."""
    raw = templates["default"]
    for name, body in resources(raw, "AWS::Lambda::Function").items():
        statements = role_statements(raw, body["Properties"]["Role"]["Fn::GetAtt"][0])
        granted = [action for action in INTERFACE_ACTIONS if allowing(statements, action)]
        if not name.startswith("StacksFunction"):
            assert granted == [], name
            continue
        assert sorted(granted) == ["ec2:DeleteNetworkInterface", "ec2:DescribeNetworkInterfaces"], name
        [delete] = allowing(statements, "ec2:DeleteNetworkInterface")
        assert delete["Condition"] == {"Null": {"ec2:ResourceTag/cluster.k8s.amazonaws.com/name": "false"}}
