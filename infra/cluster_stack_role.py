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

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.nag import acknowledge_wildcards

EC2_ACTIONS = [
    "ec2:CreateVpc",
    "ec2:DeleteVpc",
    "ec2:ModifyVpcAttribute",
    "ec2:DescribeVpcs",
    "ec2:DescribeVpcAttribute",
    "ec2:CreateSubnet",
    "ec2:DeleteSubnet",
    "ec2:ModifySubnetAttribute",
    "ec2:DescribeSubnets",
    "ec2:CreateSecurityGroup",
    "ec2:DeleteSecurityGroup",
    "ec2:DescribeSecurityGroups",
    "ec2:AuthorizeSecurityGroupIngress",
    "ec2:AuthorizeSecurityGroupEgress",
    "ec2:RevokeSecurityGroupIngress",
    "ec2:RevokeSecurityGroupEgress",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateLaunchTemplateVersion",
    "ec2:ModifyLaunchTemplate",
    "ec2:DeleteLaunchTemplate",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:RunInstances",
    "ec2:DescribeInstances",
    "ec2:DescribeImages",
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeAccountAttributes",
    "ec2:CreateTags",
    "ec2:DeleteTags",
]
AUTOSCALING_ACTIONS = [
    "autoscaling:CreateAutoScalingGroup",
    "autoscaling:UpdateAutoScalingGroup",
    "autoscaling:DeleteAutoScalingGroup",
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeScalingActivities",
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
        statements = [
            # EC2 creation and Describe* calls cannot be scoped to resources that do not exist yet.
            iam.PolicyStatement(actions=EC2_ACTIONS, resources=["*"]),
            iam.PolicyStatement(actions=AUTOSCALING_ACTIONS, resources=["*"]),
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
        acknowledge_wildcards(
            self,
            ["*"],
            "EC2 and auto scaling resources of a new stack do not exist before it, Describe calls are unscoped",
        )
        acknowledge_wildcards(
            self, [roles, profiles], "cluster stacks name their node roles and instance profiles (any name)"
        )
