"""The role CloudFormation assumes to deploy cluster and node-pool stacks (the `RoleARN` of CLM's stack calls).

Why a role of its own: cluster stacks create IAM roles, instance profiles, networks and auto scaling groups.
Without a service role CloudFormation acts with the caller's credentials, so the `stacks` function would need all
of that itself, iam:CreateRole included, on any stack it can touch. With this role the function only manages
stacks and passes this one role to CloudFormation (iam:PassRole conditioned on cloudformation.amazonaws.com).

What the role may do covers the reference configuration (examples/config: VPC, subnets, security group, node
role and instance profile, launch template, auto scaling group). Configurations that deploy more attach managed
policies through context `clm:clusterStackPolicyArns` (a list or a comma-separated string).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.nag import acknowledge_wildcards

EC2_DESCRIBE = [
    "ec2:DescribeVpcs",
    "ec2:DescribeVpcAttribute",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:DescribeInstances",
    "ec2:DescribeImages",
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeAccountAttributes",
]
EC2_CHANGES = [
    "ec2:CreateVpc",
    "ec2:DeleteVpc",
    "ec2:ModifyVpcAttribute",
    "ec2:CreateSubnet",
    "ec2:DeleteSubnet",
    "ec2:ModifySubnetAttribute",
    "ec2:CreateSecurityGroup",
    "ec2:DeleteSecurityGroup",
    "ec2:AuthorizeSecurityGroupIngress",
    "ec2:AuthorizeSecurityGroupEgress",
    "ec2:RevokeSecurityGroupIngress",
    "ec2:RevokeSecurityGroupEgress",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateLaunchTemplateVersion",
    "ec2:ModifyLaunchTemplate",
    "ec2:DeleteLaunchTemplate",
    "ec2:RunInstances",
    "ec2:CreateTags",
    "ec2:DeleteTags",
]
# What the EC2 changes act on, in this account and region (RunInstances also reads public images and snapshots).
EC2_RESOURCE_TYPES = (
    "vpc",
    "subnet",
    "security-group",
    "security-group-rule",
    "launch-template",
    "instance",
    "volume",
    "network-interface",
    "key-pair",
    "placement-group",
    "spot-instances-request",
)
AUTOSCALING_DESCRIBE = ["autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeScalingActivities"]
AUTOSCALING_CHANGES = [
    "autoscaling:CreateAutoScalingGroup",
    "autoscaling:UpdateAutoScalingGroup",
    "autoscaling:DeleteAutoScalingGroup",
    "autoscaling:CreateOrUpdateTags",
    "autoscaling:DeleteTags",
]
IAM_ACTIONS = [
    "iam:CreateRole",
    "iam:DeleteRole",
    "iam:GetRole",
    "iam:TagRole",
    "iam:UntagRole",
    "iam:UpdateAssumeRolePolicy",
    "iam:PutRolePolicy",
    "iam:DeleteRolePolicy",
    "iam:GetRolePolicy",
    "iam:AttachRolePolicy",
    "iam:DetachRolePolicy",
    "iam:CreateInstanceProfile",
    "iam:DeleteInstanceProfile",
    "iam:GetInstanceProfile",
    "iam:AddRoleToInstanceProfile",
    "iam:RemoveRoleFromInstanceProfile",
]


class ClusterStackRole(Construct):
    """CloudFormation's service role for cluster stacks; `role` is what the stacks function passes."""

    def __init__(self, scope: Construct, construct_id: str, extra_policy_arns: tuple[str, ...] = ()) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("cloudformation.amazonaws.com"),
            description="CLM: CloudFormation deploys cluster and node-pool stacks with this role",
            managed_policies=[
                iam.ManagedPolicy.from_managed_policy_arn(self, f"Extra{index}", arn)
                for index, arn in enumerate(extra_policy_arns)
            ],
        )
        roles = stack.format_arn(service="iam", region="", resource="role", resource_name="*")
        profiles = stack.format_arn(service="iam", region="", resource="instance-profile", resource_name="*")
        ec2_resources = [
            stack.format_arn(service="ec2", resource=kind, resource_name="*") for kind in EC2_RESOURCE_TYPES
        ]
        ec2_resources += [
            stack.format_arn(service="ec2", account="", resource=kind, resource_name="*")
            for kind in ("image", "snapshot")
        ]
        groups = stack.format_arn(
            service="autoscaling",
            resource="autoScalingGroup",
            resource_name="*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        statements = [
            # Describe calls support no resource-level permissions.
            iam.PolicyStatement(actions=EC2_DESCRIBE + AUTOSCALING_DESCRIBE, resources=["*"]),
            iam.PolicyStatement(actions=EC2_CHANGES, resources=ec2_resources),
            iam.PolicyStatement(actions=AUTOSCALING_CHANGES, resources=[groups]),
            iam.PolicyStatement(actions=IAM_ACTIONS, resources=[roles, profiles]),
            # Node roles go to EC2 through instance profiles of launch templates.
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[roles],
                conditions={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
            ),
            # Auto scaling creates its service-linked role on first use in an account.
            iam.PolicyStatement(
                actions=["iam:CreateServiceLinkedRole"],
                resources=[roles],
                conditions={"StringEquals": {"iam:AWSServiceName": "autoscaling.amazonaws.com"}},
            ),
        ]
        for statement in statements:
            self.role.add_to_principal_policy(statement)
        acknowledge_wildcards(self, ["*"], "EC2 and auto scaling Describe calls support no resource-level permissions")
        acknowledge_wildcards(
            self, [*ec2_resources, groups], "cluster stacks create EC2 resources and groups of any name in the account"
        )
        acknowledge_wildcards(
            self, [roles, profiles], "cluster stacks name their node roles and instance profiles (any name)"
        )
