"""The role CloudFormation assumes to deploy cluster and node-pool stacks (the `RoleARN` of CLM's stack calls).

Why a role of its own: cluster stacks create IAM roles, instance profiles, networks and auto scaling groups.
Without a service role CloudFormation acts with the caller's credentials, so the `stacks` function would need all
of that itself, iam:CreateRole included, on any stack it can touch. With this role the function only manages
stacks and passes this one role to CloudFormation (iam:PassRole conditioned on cloudformation.amazonaws.com).

What the role may do covers the reference configuration (examples/config: VPC, subnets, security group, node
role and instance profile, launch template, auto scaling group) and deleting kube-ingress-aws-controller's stacks
(infra.ingress_stack_deletes): every permission the CloudFormation resource
schemas' create, update and delete handlers of those types list, except the omissions in `OMITTED` with their
reasons (checked by tests/unit/test_cluster_stack_role.py against the schemas cfn-lint ships). Configurations that
deploy more attach managed policies through context `clm:clusterStackPolicyArns` (a list or a comma-separated
string), as examples/eks/cluster-stack-policy.yaml does.

Roles: a configuration writer edits the templates this role deploys, so whatever the role may do with IAM, they
may. It therefore makes and changes roles only under CLM's path (`/clm-cluster/`, context `clm:clusterRolePath`)
and only with CLM's permissions boundary on them (infra.cluster_role_boundary, or the managed policy of context
`clm:clusterRoleBoundaryPolicyArn`): CreateRole, PutRolePolicy, AttachRolePolicy and PutRolePermissionsBoundary
are allowed only with iam:PermissionsBoundary equal to it. Explicit denials hold whatever the extra policies
allow: no such call without the boundary, no DeleteRolePermissionsBoundary, no change to (nor PassRole of) a role
outside the path or of CLM's own roles (`<stack name>-*`), no instance profile outside the path; and, in managed
policies of their own (infra.cluster_stack_denials), no IAM user, group, policy, identity-provider or account change,
no change to CLM's own buckets or their objects, nothing on its functions, bus, state machines, table, key or
cluster secrets. PassRole is for roles under the path, to EC2 only. The path and the boundary's ARN are exported
(`clm-cluster-role-path`, `clm-cluster-role-boundary`) for the templates' Fn::ImportValue
(examples/config/cluster/stack.yaml).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, CfnOutput, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.cluster_role_boundary import BOUNDARY_EXPORT, CLUSTER_ROLE_PATH, PATH_EXPORT, ClusterRoleBoundary
from infra.cluster_stack_denials import ClmsOwn, clms_own_denials, identity_denial
from infra.context import ClmContext
from infra.ingress_stack_deletes import WILDCARDS, ingress_resources, ingress_statements
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
# Role calls that give a role rights: allowed only with CLM's boundary in the request (iam:PermissionsBoundary).
BOUNDED_ROLE_ACTIONS = ["iam:CreateRole", "iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:PutRolePermissionsBoundary"]
ROLE_ACTIONS = [
    "iam:DeleteRole",
    "iam:GetRole",
    "iam:UpdateRole",  # role update handler
    "iam:UpdateRoleDescription",  # role update handler
    "iam:ListAttachedRolePolicies",  # role delete handler: detaches the managed policies first
    "iam:ListRolePolicies",  # role delete handler: deletes the inline policies first
    "iam:TagRole",
    "iam:UntagRole",
    "iam:UpdateAssumeRolePolicy",
    "iam:DeleteRolePolicy",
    "iam:GetRolePolicy",
    "iam:DetachRolePolicy",
]
INSTANCE_PROFILE_ACTIONS = [
    "iam:CreateInstanceProfile",
    "iam:DeleteInstanceProfile",
    "iam:GetInstanceProfile",
    "iam:AddRoleToInstanceProfile",
    "iam:RemoveRoleFromInstanceProfile",
]
# What changes a role or hands it on: denied outside the path and on CLM's own roles, whatever else allows it.
ROLE_CHANGES = sorted(
    {*BOUNDED_ROLE_ACTIONS, *ROLE_ACTIONS, "iam:DeleteRolePermissionsBoundary", "iam:PassRole"}
    - {"iam:GetRole", "iam:GetRolePolicy", "iam:ListAttachedRolePolicies", "iam:ListRolePolicies"}
)
INSTANCE_PROFILE_CHANGES = sorted(set(INSTANCE_PROFILE_ACTIONS) - {"iam:GetInstanceProfile"})


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
        "iam:DeleteRolePermissionsBoundary": "denied on purpose (KeepBoundaries): a role of a cluster stack "
        "keeps CLM's boundary; an update that drops it fails",
    },
}


class ClusterStackRole(Construct):
    """CloudFormation's service role for cluster stacks; `role` is what the stacks function passes.

    Roles it makes live under `role_path` with the permissions boundary `boundary_arn` (CLM's own,
    infra.cluster_role_boundary, unless the operator names another); both are exported for the templates.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        extra_policy_arns: tuple[str, ...] = (),
        role_path: str = CLUSTER_ROLE_PATH,
        boundary_arn: str | None = None,
        role_name: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        if boundary_arn is None:
            boundary_arn = ClusterRoleBoundary(self, "Boundary").policy.managed_policy_arn
        self.boundary_arn = boundary_arn
        self.role = iam.Role(
            self,
            "Role",
            role_name=role_name,
            assumed_by=iam.ServicePrincipal("cloudformation.amazonaws.com"),
            description="CLM: CloudFormation deploys cluster and node-pool stacks with this role",
            managed_policies=[
                iam.ManagedPolicy.from_managed_policy_arn(self, f"Extra{index}", arn)
                for index, arn in enumerate(extra_policy_arns)
            ],
        )
        for statement in [*_statements(stack, role_path, boundary_arn), *ingress_statements(stack)]:
            self.role.add_to_principal_policy(statement)
        CfnOutput(stack, "ClusterRolePath", value=role_path, export_name=PATH_EXPORT)
        CfnOutput(stack, "ClusterRoleBoundaryArn", value=boundary_arn, export_name=BOUNDARY_EXPORT)
        roles, profiles = _under_path(stack, role_path)
        acknowledge_wildcards(self, ["*"], "EC2, auto scaling and ELBv2 Describe calls support no resource scoping")
        acknowledge_wildcards(self, ingress_resources(stack), WILDCARDS)
        acknowledge_wildcards(
            self,
            [*_ec2_resources(stack), _groups(stack)],
            "cluster stacks create EC2 resources and groups of any name in the account",
        )
        acknowledge_wildcards(
            self, [roles, profiles], f"cluster stacks name their roles and instance profiles (under {role_path})"
        )
        acknowledge_wildcards(
            self, [_service_linked_roles(stack)], "auto scaling names its service-linked role (AWSServiceRoleFor...)"
        )

    @classmethod
    def of_context(
        cls, scope: Construct, construct_id: str, context: ClmContext, role_name: str | None = None
    ) -> ClusterStackRole:
        """The role (named `role_name`, else by CloudFormation) with the context's extra policies, role path and
        boundary (clm:clusterStackPolicyArns, clm:clusterRolePath, clm:clusterRoleBoundaryPolicyArn)."""
        return cls(
            scope,
            construct_id,
            context.cluster_stack_policy_arns,
            role_path=context.cluster_role_path,
            boundary_arn=context.cluster_role_boundary_arn,
            role_name=role_name,
        )

    def deny(self, own: ClmsOwn) -> None:
        """Attach the denials of infra.cluster_stack_denials, IAM identity changes and CLM's own resources, as two
        managed policies (the role's inline policies are near IAM's 10,240 characters, one managed policy holds
        6,144)."""
        for name, statements in (
            ("IdentityDenials", [identity_denial()]),
            ("ClmsOwnDenials", clms_own_denials(Stack.of(self), own)),
        ):
            iam.ManagedPolicy(
                self,
                name,
                description="CLM ClusterStackRole: what it never does, whatever its extra policies allow",
                statements=statements,
                roles=[self.role],  # not the role's ManagedPolicyArns: the role would depend on CLM's functions
            )


def _statements(stack: Stack, role_path: str, boundary_arn: str) -> list[iam.PolicyStatement]:
    roles, profiles = _under_path(stack, role_path)
    clm_roles = [
        stack.format_arn(service="iam", region="", resource="role", resource_name=f"{stack.stack_name}-*"),
        stack.format_arn(service="iam", region="", resource="role", resource_name=f"*/{stack.stack_name}-*"),
    ]
    boundary = {"iam:PermissionsBoundary": boundary_arn}
    return [
        # The handlers' Describe calls: they support no resource-level permissions.
        iam.PolicyStatement(sid="Describe", actions=EC2_DESCRIBE + AUTOSCALING_DESCRIBE, resources=["*"]),
        # Networks, security groups, launch templates, and the instances groups launch from them.
        iam.PolicyStatement(sid="Ec2Resources", actions=EC2_CHANGES, resources=_ec2_resources(stack)),
        # The node pools' groups (named by CloudFormation).
        iam.PolicyStatement(sid="AutoScalingGroups", actions=AUTOSCALING_CHANGES, resources=[_groups(stack)]),
        # Roles under the path, each with CLM's boundary: what gives a role rights needs the boundary on it.
        iam.PolicyStatement(
            sid="BoundedRoles",
            actions=BOUNDED_ROLE_ACTIONS,
            resources=[roles],
            conditions={"StringEquals": boundary},
        ),
        iam.PolicyStatement(sid="Roles", actions=ROLE_ACTIONS, resources=[roles]),
        iam.PolicyStatement(sid="InstanceProfiles", actions=INSTANCE_PROFILE_ACTIONS, resources=[profiles]),
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
            resources=[_service_linked_roles(stack)],
            conditions={"StringEquals": {"iam:AWSServiceName": "autoscaling.amazonaws.com"}},
        ),
        # The denials hold whatever the extra policies (clm:clusterStackPolicyArns) allow.
        iam.PolicyStatement(
            sid="NoRoleWithoutBoundary",
            effect=iam.Effect.DENY,
            actions=BOUNDED_ROLE_ACTIONS,
            resources=["*"],
            conditions={"StringNotEquals": boundary},
        ),
        iam.PolicyStatement(
            sid="KeepBoundaries",
            effect=iam.Effect.DENY,
            actions=["iam:DeleteRolePermissionsBoundary"],
            resources=["*"],
        ),
        iam.PolicyStatement(
            sid="NoRoleOutsideThePath", effect=iam.Effect.DENY, actions=ROLE_CHANGES, not_resources=[roles]
        ),
        iam.PolicyStatement(
            sid="NoInstanceProfileOutsideThePath",
            effect=iam.Effect.DENY,
            actions=INSTANCE_PROFILE_CHANGES,
            not_resources=[profiles],
        ),
        iam.PolicyStatement(sid="NotClmsOwnRoles", effect=iam.Effect.DENY, actions=ROLE_CHANGES, resources=clm_roles),
    ]


def _under_path(stack: Stack, role_path: str) -> tuple[str, str]:
    """The ARN patterns of the roles and of the instance profiles under the path."""
    name = f"{role_path.lstrip('/')}*"
    return (
        stack.format_arn(service="iam", region="", resource="role", resource_name=name),
        stack.format_arn(service="iam", region="", resource="instance-profile", resource_name=name),
    )


def _service_linked_roles(stack: Stack) -> str:
    return stack.format_arn(
        service="iam", region="", resource="role", resource_name="aws-service-role/autoscaling.amazonaws.com/*"
    )


def _ec2_resources(stack: Stack) -> list[str]:
    own = [stack.format_arn(service="ec2", resource=kind, resource_name="*") for kind in EC2_RESOURCE_TYPES]
    public = [
        stack.format_arn(service="ec2", account="", resource=kind, resource_name="*") for kind in ("image", "snapshot")
    ]
    return own + public


def _groups(stack: Stack) -> str:
    return stack.format_arn(
        service="autoscaling",
        resource="autoScalingGroup",
        resource_name="*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
