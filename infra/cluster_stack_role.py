"""The role CloudFormation assumes to deploy cluster and node-pool stacks (the `RoleARN` of CLM's stack calls).

Why a role of its own: cluster stacks create IAM roles, instance profiles, networks and auto scaling groups.
Without a service role CloudFormation acts with the caller's credentials, so the `stacks` function would need all
of that itself, iam:CreateRole included, on any stack it can touch. With this role the function only manages
stacks and passes this one role to CloudFormation (iam:PassRole conditioned on cloudformation.amazonaws.com).

What the role may do covers the reference configuration (examples/config: VPC, subnets, security group, node
role and instance profile, launch template, auto scaling group): every permission the CloudFormation resource
schemas' create, update and delete handlers of those types list, except the omissions in `OMITTED` with their
reasons (checked by tests/unit/test_cluster_stack_role.py against the schemas cfn-lint ships). Configurations that
deploy more attach managed policies through context `clm:clusterStackPolicyArns` (a list or a comma-separated
string), as examples/eks/cluster-stack-policy.yaml does.
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
# The group handlers' autoscaling:Describe*, by name: the group, its activities, and what the handlers read back.
AUTOSCALING_DESCRIBE = [
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeScalingActivities",
    "autoscaling:DescribeLifecycleHooks",
    "autoscaling:DescribeNotificationConfigurations",
    "autoscaling:DescribeTrafficSources",
    "autoscaling:DescribeWarmPool",
]
AUTOSCALING_CHANGES = [
    "autoscaling:CreateAutoScalingGroup",
    "autoscaling:UpdateAutoScalingGroup",
    "autoscaling:DeleteAutoScalingGroup",
    "autoscaling:CreateOrUpdateTags",
    "autoscaling:DeleteTags",
    # The group handlers list these for create and update whatever the properties; CLM's roll suspends them too.
    "autoscaling:SuspendProcesses",
    "autoscaling:ResumeProcesses",
]
IAM_ACTIONS = [
    "iam:CreateRole",
    "iam:DeleteRole",
    "iam:GetRole",
    "iam:UpdateRole",  # role update handler
    "iam:UpdateRoleDescription",  # role update handler
    "iam:ListAttachedRolePolicies",  # role delete handler: detaches the managed policies first
    "iam:ListRolePolicies",  # role delete handler: deletes the inline policies first
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


WILDCARD = (
    "a wildcard, and CLM's policies grant no wildcard action (tests/unit/test_security_iam.py): the role grants the "
    "calls the examples need by name (EC2_DESCRIBE, AUTOSCALING_DESCRIBE; examples/eks: cluster-stack-policy.yaml)"
)
NO_SERVICE = "no such service in the Service Authorization Reference (cfn-lint's Policies.json): nothing to grant"
UNUSED = "the examples' templates set no {}"
# Permissions the resource schemas' handlers list that the role does not grant, by resource type, with the reason
# (tests/unit/test_cluster_stack_role.py fails on any other, and on an omission no example stack needs).
OMITTED: dict[str, dict[str, str]] = {
    "AWS::AutoScaling::AutoScalingGroup": {
        "autoscaling:Describe*": WILDCARD,
        "ec2:Describe*": WILDCARD,
        "ec2:Get*": WILDCARD + "; ec2:GetInstanceTypesFromInstanceRequirements is for InstanceRequirements, unused",
        "ssm:Get*": WILDCARD + "; launch templates resolve no SSM parameter (examples/eks: a stack parameter)",
        "elasticloadbalancing:Describe*": WILDCARD + "; " + UNUSED.format("LoadBalancerNames or TargetGroupARNs"),
        "managed-fleets:Get*": NO_SERVICE,
        "managed-fleets:CreateAutoScalingGroup": NO_SERVICE,
        "managed-fleets:UpdateAutoScalingGroup": NO_SERVICE,
        "managed-fleets:DeleteAutoScalingGroup": NO_SERVICE,
        "managed-fleets:RegisterAutoScalingGroup": NO_SERVICE,
        "managed-fleets:DeregisterAutoScalingGroup": NO_SERVICE,
        "autoscaling:EnableMetricsCollection": UNUSED.format("MetricsCollection"),
        "autoscaling:DisableMetricsCollection": UNUSED.format("MetricsCollection"),
        "autoscaling:PutNotificationConfiguration": UNUSED.format("NotificationConfigurations"),
        "autoscaling:DeleteNotificationConfiguration": UNUSED.format("NotificationConfigurations"),
        "autoscaling:PutLifecycleHook": UNUSED.format("LifecycleHookSpecificationList"),
        "autoscaling:DeleteLifecycleHook": UNUSED.format("LifecycleHookSpecificationList"),
        "autoscaling:AttachLoadBalancers": UNUSED.format("LoadBalancerNames"),
        "autoscaling:DetachLoadBalancers": UNUSED.format("LoadBalancerNames"),
        "autoscaling:AttachLoadBalancerTargetGroups": UNUSED.format("TargetGroupARNs"),
        "autoscaling:DetachLoadBalancerTargetGroups": UNUSED.format("TargetGroupARNs"),
        "autoscaling:AttachTrafficSources": UNUSED.format("TrafficSources"),
        "autoscaling:DetachTrafficSources": UNUSED.format("TrafficSources"),
        "vpc-lattice:RegisterTargets": UNUSED.format("TrafficSources (VPC Lattice target groups)"),
        "vpc-lattice:DeregisterTargets": UNUSED.format("TrafficSources (VPC Lattice target groups)"),
        "vpc-lattice:GetTargetGroup": UNUSED.format("TrafficSources (VPC Lattice target groups)"),
        "vpc-lattice:ListTargets": UNUSED.format("TrafficSources (VPC Lattice target groups)"),
        "autoscaling:StartInstanceRefresh": UNUSED.format("UpdatePolicy: CLM replaces instances itself (the roll)"),
        "autoscaling:CancelInstanceRefresh": UNUSED.format("UpdatePolicy: CLM replaces instances itself (the roll)"),
        "cloudwatch:PutMetricAlarm": UNUSED.format("scaling policy or alarm on their groups"),
    },
    "AWS::EC2::SecurityGroup": {
        "ec2:UpdateSecurityGroupRuleDescriptionsIngress": UNUSED.format("Description on a security group rule"),
        "ec2:UpdateSecurityGroupRuleDescriptionsEgress": UNUSED.format("Description on a security group rule"),
    },
    "AWS::EC2::Subnet": {
        "ec2:AssociateSubnetCidrBlock": UNUSED.format("Ipv6CidrBlock (IPv4 only)"),
        "ec2:DisassociateSubnetCidrBlock": UNUSED.format("Ipv6CidrBlock (IPv4 only)"),
    },
    "AWS::EC2::VPC": {
        "ec2:CreateVpcEncryptionControl": UNUSED.format("VPC encryption control"),
        "ec2:ModifyVpcTenancy": UNUSED.format("InstanceTenancy (default tenancy)"),
    },
    "AWS::EC2::VPCGatewayAttachment": {
        action: UNUSED.format("VpnGatewayId (examples/eks attaches an internet gateway)")
        for action in ("ec2:AttachVpnGateway", "ec2:DetachVpnGateway", "ec2:DescribeVpnGateways")
    },
    "AWS::EKS::Cluster": {
        "kms:DescribeKey": UNUSED.format("EncryptionConfig (secrets encryption with a KMS key)"),
        "kms:CreateGrant": UNUSED.format("EncryptionConfig (secrets encryption with a KMS key)"),
    },
    "AWS::IAM::Role": {
        "iam:PutRolePermissionsBoundary": UNUSED.format("PermissionsBoundary; the role could then lift any role's"),
        "iam:DeleteRolePermissionsBoundary": UNUSED.format("PermissionsBoundary; the role could then lift any role's"),
    },
}


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
            # The handlers' Describe calls: they support no resource-level permissions.
            iam.PolicyStatement(sid="Describe", actions=EC2_DESCRIBE + AUTOSCALING_DESCRIBE, resources=["*"]),
            # Networks, security groups, launch templates, and the instances groups launch from them.
            iam.PolicyStatement(sid="Ec2Resources", actions=EC2_CHANGES, resources=ec2_resources),
            # The node pools' groups (named by CloudFormation).
            iam.PolicyStatement(sid="AutoScalingGroups", actions=AUTOSCALING_CHANGES, resources=[groups]),
            # Node roles and their instance profiles (named by the templates, or by CloudFormation).
            iam.PolicyStatement(sid="RolesAndInstanceProfiles", actions=IAM_ACTIONS, resources=[roles, profiles]),
            # Node roles go to EC2 through instance profiles of launch templates.
            iam.PolicyStatement(
                sid="PassNodeRoles",
                actions=["iam:PassRole"],
                resources=[roles],
                conditions={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
            ),
            # Auto scaling creates its service-linked role on first use in an account.
            iam.PolicyStatement(
                sid="AutoScalingServiceLinkedRole",
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
