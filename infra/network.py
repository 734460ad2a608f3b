"""Optional VPC placement of CLM's functions (context `clm:vpcId` and `clm:subnetIds`)."""

from __future__ import annotations

from typing import Any

from aws_cdk import Fn
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
