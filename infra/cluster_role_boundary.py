"""The permissions boundary of every role a cluster stack creates, and the IAM path those roles live under.

A permissions boundary caps what a role may ever do, whatever policies are attached to it: its rights are the
intersection of its identity policies and the boundary. The ClusterStackRole (infra.cluster_stack_role) creates
and changes roles only under CLUSTER_ROLE_PATH and only with this boundary set (IAM conditions on
iam:PermissionsBoundary), so a configuration writer, who edits the templates CloudFormation deploys with that role,
gets no more than this boundary: AdministratorAccess attached to such a role gives it the boundary's rights only.

What the boundary allows: exactly the actions of the AWS managed policies the example node and EKS control-plane
roles attach (examples/config, examples/eks: AmazonEKSClusterPolicy, AmazonEKSWorkerNodePolicy,
AmazonEKS_CNI_Policy, AmazonEC2ContainerRegistryReadOnly, AmazonSSMManagedInstanceCore; the list is checked
against those policies by tests/unit/test_cluster_role_boundary.py), on any resource, as those policies grant
them. And what a node needs to boot as CLM sets it up (clm.render.node_files): s3:GetObject on the objects of
CLM's node-files bucket (its bootstrap archive) and kms:Decrypt with the keys tagged `clm:managed-by=clm` (the
cluster stacks' files keys, which CloudFormation tags with the stack's tags; each key's policy says whose roles). No
IAM action (but the service-linked role of load balancers, as AmazonEKSClusterPolicy), no STS, no Organizations, no
other S3 (no listing, no other bucket), no Secrets Manager: such a role cannot make or change roles, assume other
roles, nor read CLM's configuration or kubeconfig secrets. What it cannot stop: a template may still give such a
role a trust policy naming another account (IAM has no condition key on the trust policy); that account then gets the
boundary's rights (EC2, load balancers, auto scaling, ECR reads), never more. Node roles of real configurations
that need more (e.g. CloudWatch Logs, S3 for their workloads) use a boundary of the operator's own, context
`clm:clusterRoleBoundaryPolicyArn` (docs/deploy.md), which is a deliberate widening.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.nag import acknowledge_wildcards
from infra.node_files import bucket_name
from infra.tags import MANAGED_BY, MANAGED_BY_TAG

CLUSTER_ROLE_PATH = "/clm-cluster/"  # context clm:clusterRolePath
# The stacks' templates read both with Fn::ImportValue (CloudFormation exports of CLM's stack).
PATH_EXPORT = "clm-cluster-role-path"
BOUNDARY_EXPORT = "clm-cluster-role-boundary"

# The example roles' managed policies' actions, by service (AmazonEKSClusterPolicy's iam:CreateServiceLinkedRole
# is in LOAD_BALANCER_SERVICE_LINKED_ROLE, with its condition).
BOUNDARY_ACTIONS = {
    "autoscaling": ["DescribeAutoScalingGroups", "UpdateAutoScalingGroup"],
    "ec2": [
        "AssignPrivateIpAddresses", "AttachNetworkInterface", "AttachVolume", "AuthorizeSecurityGroupIngress",
        "CreateNetworkInterface", "CreateRoute", "CreateSecurityGroup", "CreateTags", "CreateVolume",
        "DeleteNetworkInterface", "DeleteRoute", "DeleteSecurityGroup", "DeleteVolume", "DescribeAccountAttributes",
        "DescribeAddresses", "DescribeAvailabilityZones", "DescribeDhcpOptions", "DescribeInstanceTopology",
        "DescribeInstanceTypes", "DescribeInstances", "DescribeInternetGateways", "DescribeNetworkInterfaces",
        "DescribeRouteTables", "DescribeSecurityGroups", "DescribeSubnets", "DescribeTags", "DescribeVolumes",
        "DescribeVolumesModifications", "DescribeVpcs", "DetachNetworkInterface", "DetachVolume",
        "ModifyInstanceAttribute", "ModifyNetworkInterfaceAttribute", "ModifyVolume", "RevokeSecurityGroupIngress",
        "UnassignPrivateIpAddresses",
    ],
    "ec2messages": ["AcknowledgeMessage", "DeleteMessage", "FailMessage", "GetEndpoint", "GetMessages", "SendReply"],
    "ecr": [
        "BatchCheckLayerAvailability", "BatchGetImage", "DescribeImageScanFindings", "DescribeImages",
        "DescribeRepositories", "GetAuthorizationToken", "GetDownloadUrlForLayer", "GetLifecyclePolicy",
        "GetLifecyclePolicyPreview", "GetRepositoryPolicy", "ListImages", "ListTagsForResource",
    ],
    "eks": ["DescribeCluster"],
    "eks-auth": ["AssumeRoleForPodIdentity"],
    "elasticloadbalancing": [
        "AddTags", "ApplySecurityGroupsToLoadBalancer", "AttachLoadBalancerToSubnets", "ConfigureHealthCheck",
        "CreateListener", "CreateLoadBalancer", "CreateLoadBalancerListeners", "CreateLoadBalancerPolicy",
        "CreateTargetGroup", "DeleteListener", "DeleteLoadBalancer", "DeleteLoadBalancerListeners",
        "DeleteTargetGroup", "DeregisterInstancesFromLoadBalancer", "DeregisterTargets", "DescribeListeners",
        "DescribeLoadBalancerAttributes", "DescribeLoadBalancerPolicies", "DescribeLoadBalancers",
        "DescribeTargetGroupAttributes", "DescribeTargetGroups", "DescribeTargetHealth",
        "DetachLoadBalancerFromSubnets", "ModifyListener", "ModifyLoadBalancerAttributes", "ModifyTargetGroup",
        "ModifyTargetGroupAttributes", "RegisterInstancesWithLoadBalancer", "RegisterTargets",
        "SetLoadBalancerPoliciesForBackendServer", "SetLoadBalancerPoliciesOfListener",
    ],
    "kms": ["DescribeKey"],
    "ssm": [
        "DescribeAssociation", "DescribeDocument", "GetDeployablePatchSnapshotForInstance", "GetDocument",
        "GetManifest", "GetParameter", "GetParameters", "ListAssociations", "ListInstanceAssociations",
        "PutComplianceItems", "PutConfigurePackageResult", "PutInventory", "UpdateAssociationStatus",
        "UpdateInstanceAssociationStatus", "UpdateInstanceInformation",
    ],
    "ssmmessages": ["CreateControlChannel", "CreateDataChannel", "OpenControlChannel", "OpenDataChannel"],
}  # fmt: skip
LOAD_BALANCER_SERVICE = "elasticloadbalancing.amazonaws.com"


def boundary_actions() -> list[str]:
    """Every action the boundary allows on any resource, `service:Action`."""
    return [f"{service}:{name}" for service, names in BOUNDARY_ACTIONS.items() for name in names]


class ClusterRoleBoundary(Construct):
    """The managed policy every role of a cluster stack must carry as its permissions boundary."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        archives = f"arn:{stack.partition}:s3:::{bucket_name(stack)}/*"
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            description="CLM: permissions boundary of the roles cluster stacks create (nodes, EKS control plane)",
            statements=[
                iam.PolicyStatement(sid="NodesAndControlPlanes", actions=boundary_actions(), resources=["*"]),
                iam.PolicyStatement(sid="NodeBootstrapArchives", actions=["s3:GetObject"], resources=[archives]),
                iam.PolicyStatement(
                    sid="NodeBootstrapSecrets",
                    actions=["kms:Decrypt"],
                    resources=["*"],
                    conditions={"StringEquals": {f"aws:ResourceTag/{MANAGED_BY_TAG}": MANAGED_BY}},
                ),
                iam.PolicyStatement(
                    sid="LoadBalancerServiceLinkedRole",
                    actions=["iam:CreateServiceLinkedRole"],
                    resources=["*"],
                    conditions={"StringEquals": {"iam:AWSServiceName": LOAD_BALANCER_SERVICE}},
                ),
            ],
        )
        acknowledge_wildcards(
            self, ["*"], "a permissions boundary caps, it grants nothing; the node roles' AWS policies use *"
        )
        acknowledge_wildcards(self, [archives], "nodes read their archive; its key is a content hash per cluster")
