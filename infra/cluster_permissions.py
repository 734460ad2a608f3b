"""The cluster-side permissions of CLM's functions: what they do to a cluster's AWS resources, in the account and
region of the grantee's stack. The hub's functions hold them for its own account and region; each target stack's
roles (infra.target_roles) hold the same for theirs (docs/fleet.md). Hub-side grants: infra.permissions.

Scoping notes:
- CloudFormation: cluster stacks are named by the cluster's local_id (any name), node-pool stacks
  `nodepool-<pool>-<cluster>`, so no name pattern covers them all: the stacks function may read any stack of this
  account and region (`stack/*`), but change only stacks that carry the tag `clm:managed-by`, which CLM writes
  on every stack it creates (clm.stacks.names; the ownership tag `kubernetes.io/cluster/<id>` holds the cluster
  id, and a condition key cannot hold a wildcard). It creates stacks only with that tag, and creates, updates and
  deletes them only with the ClusterStackRole passed (`cloudformation:RoleArn`), never with its own rights nor
  with a role a stack was given elsewhere. The one kind of stack it did not create that it may delete (at
  decommission, clm.stacks.ingress): kube-ingress-aws-controller's load balancer stacks, tagged
  `kubernetes:application=kube-ingress-aws-controller`, and only with the ClusterStackRole.
- Auto scaling: IAM condition keys cannot hold a wildcard tag key (`kubernetes.io/cluster/*`), so changes are
  allowed on groups carrying the fixed tag `node-pool`, which every node-pool stack has (clm.stacks.names;
  CloudFormation copies stack tags to the group).
- Describe/List calls of EC2 and auto scaling, cloudformation:ListStacks and sts:GetCallerIdentity support no
  resource scoping. ListStacks finds a cluster's node-pool stacks by name (clm.stacks.removed), each then described
  by name: DescribeStacks without a StackName would need ListStacks as well and read every stack.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from infra.etcd_permissions import grant_etcd_encrypt, grant_etcd_stack_policy
from infra.grantee import Grantee
from infra.tags import (
    CNI_CLUSTER_TAG,
    ETCD_KEY_ALIAS,
    INGRESS_APP_TAG,
    INGRESS_CONTROLLER,
    KARPENTER_NODEPOOL_TAG,
    MANAGED_BY,
    MANAGED_BY_TAG,
    NODE_POOL_TAG,
    VOLUME_CLUSTER_TAG,
)

CLUSTER_FUNCTIONS = ("run", "stacks", "kube", "roll")  # the functions that touch a cluster's AWS resources
STACK_READ = [
    "cloudformation:DescribeStacks",
    "cloudformation:DescribeStackResources",
    "cloudformation:ListStackResources",
]
STACK_INSPECT = [*STACK_READ, "cloudformation:DescribeStackEvents", "cloudformation:GetTemplate"]
ASG_CHANGES = [
    "autoscaling:SuspendProcesses",
    "autoscaling:ResumeProcesses",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
    "autoscaling:UpdateAutoScalingGroup",
    "autoscaling:CreateOrUpdateTags",
    "autoscaling:DeleteTags",
]
_COLON = ArnFormat.COLON_RESOURCE_NAME
NODE_FILES = "node pools' and etcd's archives are content-addressed objects under <local id>/<master|worker|etcd>/"
LIST_STACKS = "cloudformation:ListStacks supports no resource-level permissions (node-pool stacks are found by name)"
STACKS = "cluster stacks are named by local_id, so no name pattern covers them (see the module doc)"
OWNED_STACKS = f"{STACKS}; changes only to stacks tagged {MANAGED_BY_TAG}, with the ClusterStackRole"
INGRESS_STACKS = f"the ingress controller names its stacks; only those tagged {INGRESS_APP_TAG}={INGRESS_CONTROLLER}"
UNSCOPED_READS = [
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeTags",
    "ec2:DescribeInstances",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribeLaunchTemplateVersions",
]


def grant_cluster_side(
    grantees: Mapping[str, Grantee], node_files: s3.IBucket, cloudformation_role: iam.IRole, *, etcd: bool
) -> None:
    """Give each of CLUSTER_FUNCTIONS (`grantees` by folder) its cluster-side grants; `etcd`: CLM manages the etcd
    stack (context clm:manageEtcdStack)."""
    run, stacks = grantees["run"], grantees["stacks"]
    grant_lookups(run)
    grant_account_lookups(run)
    grant_node_files(run, node_files)
    grant_eks_describe(run)  # CLM's EKS hook after the cluster stack (clm.workflow.eks_hook)
    grant_stacks(stacks, cloudformation_role)
    grant_eks_describe(stacks)  # a decommission proves a zalando-eks cluster's alias its own
    if etcd:
        grant_etcd_encrypt(run)
        grant_etcd_stack_policy(stacks)
    grant_kube(grantees["kube"])
    grant_alarm_reads(grantees["kube"])
    grant_roll(grantees["roll"])


def grant_node_files(grantee: Grantee, bucket: s3.IBucket) -> None:
    """Node pools' bootstrap files (clm.render.node_files): the cluster stack's outputs (DescribeStacks), the
    archives' upload (HeadObject first: ListBucket makes a missing object answer 404, not 403), and KMS Encrypt with
    the keys the cluster stacks made only (CloudFormation copies the stack's tag clm:managed-by onto them)."""
    grantee.allow(["cloudformation:DescribeStacks"], [_stacks(grantee)], reason=STACKS)
    grantee.allow(["s3:GetObject", "s3:PutObject"], [bucket.arn_for_objects("*")], reason=NODE_FILES)
    grantee.allow(["s3:ListBucket"], [bucket.bucket_arn])
    keys = Stack.of(grantee).format_arn(service="kms", resource="key", resource_name="*")
    grantee.allow(
        ["kms:Encrypt"],
        [keys],
        {"StringEquals": {f"aws:ResourceTag/{MANAGED_BY_TAG}": MANAGED_BY}},
        reason=f"the cluster stacks' keys, tagged {MANAGED_BY_TAG}={MANAGED_BY} by CloudFormation",
    )


def grant_lookups(grantee: Grantee) -> None:
    """What templates ask EC2 at render (clm.render.lookups): CLM's amiID (DescribeImages), instance types
    (DescribeInstanceTypes), the cluster's VPC and subnets (DescribeVpcs, DescribeSubnets). Read-only; EC2's
    Describe calls support no resource-level permissions."""
    grantee.allow(
        ["ec2:DescribeImages", "ec2:DescribeInstanceTypes", "ec2:DescribeSubnets", "ec2:DescribeVpcs"],
        ["*"],
        reason="EC2 Describe calls support no resource-level permissions",
    )


def grant_account_lookups(grantee: Grantee) -> None:
    """What templates ask ACM and KMS at render (clm.render.account_lookups): the issued certificates, to choose
    `load_balancer_certificate`, and the key ARN behind `alias/etcd-cluster` (DescribeKey through that alias
    only). Read-only."""
    stack = Stack.of(grantee)
    grantee.allow(["acm:ListCertificates"], ["*"], reason="acm:ListCertificates supports no resource-level permission")
    certificates = stack.format_arn(service="acm", resource="certificate", resource_name="*")
    grantee.allow(["acm:DescribeCertificate"], [certificates], reason="any issued certificate may match the host")
    grantee.allow(
        ["kms:DescribeKey"],
        [stack.format_arn(service="kms", resource="key", resource_name="*")],
        {"StringEquals": {"kms:RequestAlias": ETCD_KEY_ALIAS}},
        reason="the key is named by its alias only (kms:RequestAlias)",
    )


def grant_stacks(grantee: Grantee, cloudformation_role: iam.IRole) -> None:
    """Read stacks; create and change only CLM's stacks, through CloudFormation's role (and pass only that role);
    clean up after a decommission; terminate Karpenter's instances."""
    stacks = [_stacks(grantee)]
    role = {"cloudformation:RoleArn": cloudformation_role.role_arn}
    requested = {f"aws:RequestTag/{MANAGED_BY_TAG}": "false"}
    owned = {f"aws:ResourceTag/{MANAGED_BY_TAG}": "false"}
    grantee.allow(STACK_INSPECT, stacks, reason=STACKS)
    grantee.allow(
        ["cloudformation:CreateStack"], stacks, {"StringEquals": role, "Null": requested}, reason=OWNED_STACKS
    )
    grantee.allow(
        ["cloudformation:UpdateStack"],
        stacks,
        {"StringEquals": role, "Null": {**owned, **requested}},
        reason=OWNED_STACKS,
    )
    grantee.allow(
        ["cloudformation:DeleteStack", "cloudformation:ContinueUpdateRollback"],
        stacks,
        {"StringEquals": role, "Null": owned},
        reason=OWNED_STACKS,
    )
    grantee.allow(["cloudformation:UpdateTerminationProtection"], stacks, {"Null": owned}, reason=OWNED_STACKS)
    ingress = {f"aws:ResourceTag/{INGRESS_APP_TAG}": INGRESS_CONTROLLER}  # decommission (clm.stacks.ingress)
    grantee.allow(["cloudformation:DeleteStack"], stacks, {"StringEquals": {**role, **ingress}}, reason=INGRESS_STACKS)
    grantee.allow(
        ["cloudformation:UpdateTerminationProtection"], stacks, {"StringEquals": ingress}, reason=INGRESS_STACKS
    )
    grantee.allow(["cloudformation:ListStacks"], ["*"], reason=LIST_STACKS)  # the pools step
    grantee.allow(
        ["iam:PassRole"],
        [cloudformation_role.role_arn],
        {"StringEquals": {"iam:PassedToService": "cloudformation.amazonaws.com"}},
    )
    _grant_leftovers(grantee)
    grant_karpenter_termination(grantee)


def grant_karpenter_termination(grantee: Grantee) -> None:
    """Terminate instances Karpenter launched (tagged karpenter.sh/nodepool): a Karpenter pool's outdated nodes
    (roll) and a decommissioned cluster's (stacks). The cluster's own tag key names the cluster, so the code checks
    it (clm.stacks.karpenter_pool); IAM keeps CLM away from every instance Karpenter did not launch."""
    instances = Stack.of(grantee).format_arn(service="ec2", resource="instance", resource_name="*")
    grantee.allow(
        ["ec2:TerminateInstances"],
        [instances],
        {"Null": {f"ec2:ResourceTag/{KARPENTER_NODEPOOL_TAG}": "false"}},
        reason=f"only instances tagged {KARPENTER_NODEPOOL_TAG} (launched by Karpenter)",
    )


def _grant_leftovers(grantee: Grantee) -> None:
    """After a decommission: delete the VPC CNI's leaked interfaces (tagged with the cluster's name) and, when asked,
    the cluster's volumes. EC2 conditions only on fixed tag keys: the interfaces' and `KubernetesCluster` (a volume's
    cluster, as its provisioner tags it beside kubernetes.io/cluster/<id>); the code checks their values."""
    stack = Stack.of(grantee)
    grantee.allow(
        ["ec2:DescribeNetworkInterfaces", "ec2:DescribeVolumes", "ec2:DescribeInstances"],
        ["*"],
        reason="Describe calls of EC2 support no resource scoping",
    )
    grantee.allow(
        ["ec2:DeleteNetworkInterface"],
        [stack.format_arn(service="ec2", resource="network-interface", resource_name="*")],
        {"Null": {f"ec2:ResourceTag/{CNI_CLUSTER_TAG}": "false"}},
        reason=f"interfaces are found by tag; only those tagged {CNI_CLUSTER_TAG} (the VPC CNI's)",
    )
    grantee.allow(
        ["ec2:DeleteVolume"],
        [stack.format_arn(service="ec2", resource="volume", resource_name="*")],
        {"Null": {f"ec2:ResourceTag/{VOLUME_CLUSTER_TAG}": "false"}},
        reason=f"a decommissioned cluster's volumes, only when asked; only those tagged {VOLUME_CLUSTER_TAG}",
    )


def grant_kube(grantee: Grantee) -> None:
    """Reach an EKS cluster's API server: its endpoint and CA (DescribeCluster), an IAM token (a presigned
    GetCallerIdentity, which is also how a session's account is checked)."""
    grant_eks_describe(grantee)
    grantee.allow(["sts:GetCallerIdentity"], ["*"], reason="sts:GetCallerIdentity supports no resource scoping")


def grant_eks_describe(grantee: Grantee) -> None:
    """Read EKS clusters (DescribeCluster only): their endpoint, CA, OIDC issuer, service range and tags."""
    grantee.allow(
        ["eks:DescribeCluster"],
        [Stack.of(grantee).format_arn(service="eks", resource="cluster", resource_name="*")],
        reason="the EKS cluster is named by each cluster's alias (zalando-eks) or config (eks_cluster_name)",
    )


def grant_alarm_reads(grantee: Grantee) -> None:
    """A rollout's health gate reads the CloudWatch alarms its policy names (clm.workflow.health_gate)."""
    alarms = Stack.of(grantee).format_arn(service="cloudwatch", resource="alarm", resource_name="*", arn_format=_COLON)
    grantee.allow(["cloudwatch:DescribeAlarms"], [alarms], reason="the rollout policy names the alarms (any name)")


def grant_roll(grantee: Grantee) -> None:
    """Reach the cluster's API server, find node pools' stacks, groups and instances, change CLM's groups, terminate
    Karpenter's outdated instances."""
    grant_kube(grantee)
    grantee.allow(STACK_READ, [_stacks(grantee)], reason=STACKS)
    grantee.allow(["cloudformation:ListStacks"], ["*"], reason=LIST_STACKS)  # resume_all
    grantee.allow(UNSCOPED_READS, ["*"], reason="Describe calls of EC2 and auto scaling support no resource scoping")
    groups = Stack.of(grantee).format_arn(
        service="autoscaling", resource="autoScalingGroup", resource_name="*", arn_format=_COLON
    )
    grantee.allow(
        ASG_CHANGES,
        [groups],
        {"Null": {f"aws:ResourceTag/{NODE_POOL_TAG}": "false"}},
        reason=f"groups are named by CloudFormation; only groups tagged {NODE_POOL_TAG} (node-pool stacks)",
    )
    grant_karpenter_termination(grantee)
    grantee.allow(
        ["ec2:DescribeInstanceAttribute"],
        [Stack.of(grantee).format_arn(service="ec2", resource="instance", resource_name="*")],
        reason="a Karpenter instance's user data, compared with its EC2NodeClass's (instances are found by tag)",
    )


def _stacks(grantee: Grantee) -> str:
    return Stack.of(grantee).format_arn(service="cloudformation", resource="stack", resource_name="*")
