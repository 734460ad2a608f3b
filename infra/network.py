"""Optional VPC placement of CLM's functions (context `clm:vpcId` and `clm:subnetIds`).

A function in a VPC reaches it through network interfaces that Lambda creates with the function's own role:
CreateFunction fails unless that role allows them. CDK attaches AWSLambdaVPCAccessExecutionRole only to roles it
creates itself, and every CLM function has a role of its own (infra.functions), so `interface_grants` lists the
same rights (Lambda developer guide, "Giving Lambda functions access to resources in an Amazon VPC"), scoped to
this account and region where EC2 allows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Fn, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from infra.context import ClmContext


class FunctionNetwork(Construct):
    """The VPC's given subnets and one security group (egress only) that every function shares.

    Functions in a VPC reach AWS APIs and Kubernetes API servers through the VPC's NAT or endpoints.
    """

    def __init__(self, scope: Construct, construct_id: str, context: ClmContext) -> None:
        super().__init__(scope, construct_id)
        if not context.vpc_id:
            raise ValueError("FunctionNetwork needs context clm:vpcId and clm:subnetIds")
        self.vpc = ec2.Vpc.from_vpc_attributes(self, "Vpc", vpc_id=context.vpc_id, availability_zones=Fn.get_azs())
        self.subnets = [
            ec2.Subnet.from_subnet_id(self, f"Subnet{index}", subnet_id)
            for index, subnet_id in enumerate(context.subnet_ids)
        ]
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=self.vpc,
            description="CLM functions: no inbound traffic; outbound to AWS APIs and Kubernetes API servers",
            allow_all_outbound=True,
        )

    def function_options(self) -> dict[str, Any]:
        """Keyword arguments of `lambda_.Function` that place it here."""
        return {
            "vpc": self.vpc,
            "vpc_subnets": ec2.SubnetSelection(subnets=self.subnets),
            "security_groups": [self.security_group],
        }


@dataclass(frozen=True)
class Grant:
    """Actions on resources, with the reason for any wildcard among them."""

    actions: list[str]
    resources: list[str]
    reason: str


def interface_grants(scope: Construct) -> list[Grant]:
    """What a function's role needs so that Lambda can attach the function to the VPC."""
    stack = Stack.of(scope)
    interfaces, subnets, groups = (
        stack.format_arn(service="ec2", resource=kind, resource_name="*")
        for kind in ("network-interface", "subnet", "security-group")
    )
    return [
        Grant(
            ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"],
            ["*"],
            "Lambda's network interfaces: EC2 Describe calls support no resource-level permissions",
        ),
        Grant(
            ["ec2:CreateNetworkInterface"],
            [interfaces, subnets, groups],
            "Lambda creates the function's network interfaces (named by EC2) in the VPC's subnets",
        ),
        Grant(
            ["ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"],
            [interfaces],
            "Lambda manages the function's network interfaces, named by EC2",
        ),
    ]
