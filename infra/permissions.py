"""Least-privilege permissions of each CLM function: exactly the calls its steps make (see clm.workflow).

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

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn

from infra.artefacts import RENDERINGS_PREFIX, TEMPLATES_PREFIX
from infra.config_source import ConfigSource
from infra.context import ClmContext
from infra.functions import ClmFunction

DECRYPT_KEYS_ENV = "CLM_DECRYPT_KEY_ARNS"  # clm.render.secrets.DECRYPT_KEYS_ENV
CONFIG_ITEM_CONTEXT = ("clm:cluster-id", "clm:config-item")  # clm.render.secrets.CLUSTER_KEY, ITEM_KEY
NODE_FILES_BUCKET_ENV = "CLM_NODE_FILES_BUCKET"  # clm.workflow.run_steps.NODE_FILES_BUCKET_ENV
NODE_POOL_TAG = "kubernetes.io/node-pool"  # clm.stacks.names.NODE_POOL_TAG (CLM's, provisioner/node_pools.go)
MANAGED_BY_TAG = "clm:managed-by"  # clm.stacks.names.MANAGED_BY_TAG
MANAGED_BY = "clm"  # clm.stacks.names.MANAGED_BY
CNI_CLUSTER_TAG = "cluster.k8s.amazonaws.com/name"  # clm.stacks.leftovers.CNI_CLUSTER_TAG
VOLUME_CLUSTER_TAG = "KubernetesCluster"  # clm.stacks.leftovers.VOLUME_CLUSTER_TAG
CLUSTER_ID_TAG = "clm:cluster-id"  # clm.kube.auth.CLUSTER_ID_TAG
KARPENTER_NODEPOOL_TAG = "karpenter.sh/nodepool"  # clm.stacks.karpenter_pool.NODEPOOL_TAG
ETCD_KEY_ALIAS = "alias/etcd-cluster"  # clm.render.account_lookups.ETCD_KEY_ALIAS (CLM's etcd key)
INGRESS_APP_TAG = "kubernetes:application"  # clm.stacks.names.INGRESS_APP_TAG
INGRESS_CONTROLLER = "kube-ingress-aws-controller"  # clm.stacks.names.INGRESS_CONTROLLER
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
RENDERINGS = "renderings are content-addressed objects under renderings/"
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


def grant_run(
    function: ClmFunction, registry: dynamodb.ITable, config: ConfigSource, artefacts: s3.IBucket, context: ClmContext
) -> None:
    """Registry read/write, configuration read, renderings write, whether a lock holder still runs, and waking
    the parked drains of the roll workflow."""
    registry.grant_read_write_data(function.role)
    config.grant_read(function.role)
    function.allow(["s3:PutObject"], [artefacts.arn_for_objects(f"{RENDERINGS_PREFIX}*")], reason=RENDERINGS)
    grant_artefact_key(function, artefacts, write=True)
    stack = Stack.of(function)
    executions = stack.format_arn(
        service="states", resource="execution", resource_name=f"{context.state_machine_name}:*", arn_format=_COLON
    )
    function.allow(
        ["states:DescribeExecution"], [executions], reason="a lock is taken over once its execution no longer runs"
    )
    function.allow(
        ["states:SendTaskSuccess"],
        ["*"],
        reason="states:SendTaskSuccess supports no resource-level permission (the task token names the task)",
    )


def grant_node_files(function: ClmFunction, bucket: s3.IBucket, artefacts: s3.IBucket) -> None:
    """Node pools' bootstrap files (clm.render.node_files): the cluster stack's outputs (DescribeStacks), the
    archives' upload and the run's node-pool rendering (HeadObject first: ListBucket makes a missing object answer
    404, not 403), and KMS Encrypt with the keys the cluster stacks made only (CloudFormation copies the stack's tag
    clm:managed-by onto them)."""
    function.function.add_environment(NODE_FILES_BUCKET_ENV, bucket.bucket_name)
    function.allow(["cloudformation:DescribeStacks"], [_stacks(function)], reason=STACKS)
    function.allow(["s3:GetObject", "s3:PutObject"], [bucket.arn_for_objects("*")], reason=NODE_FILES)
    function.allow(["s3:ListBucket"], [bucket.bucket_arn, artefacts.bucket_arn])
    function.allow(["s3:GetObject"], [artefacts.arn_for_objects(f"{RENDERINGS_PREFIX}*")], reason=RENDERINGS)
    keys = Stack.of(function).format_arn(service="kms", resource="key", resource_name="*")
    function.allow(
        ["kms:Encrypt"],
        [keys],
        {"StringEquals": {f"aws:ResourceTag/{MANAGED_BY_TAG}": MANAGED_BY}},
        reason=f"the cluster stacks' keys, tagged {MANAGED_BY_TAG}={MANAGED_BY} by CloudFormation",
    )


def grant_lookups(function: ClmFunction) -> None:
    """What templates ask EC2 at render (clm.render.lookups): CLM's amiID (DescribeImages), instance types
    (DescribeInstanceTypes), the cluster's VPC and subnets (DescribeVpcs, DescribeSubnets). Read-only; EC2's
    Describe calls support no resource-level permissions."""
    function.allow(
        ["ec2:DescribeImages", "ec2:DescribeInstanceTypes", "ec2:DescribeSubnets", "ec2:DescribeVpcs"],
        ["*"],
        reason="EC2 Describe calls support no resource-level permissions",
    )


def grant_account_lookups(function: ClmFunction) -> None:
    """What templates ask ACM and KMS at render (clm.render.account_lookups): the issued certificates, to choose
    `load_balancer_certificate`, and the key ARN behind `alias/etcd-cluster` (DescribeKey through that alias
    only). Read-only."""
    stack = Stack.of(function)
    function.allow(["acm:ListCertificates"], ["*"], reason="acm:ListCertificates supports no resource-level permission")
    certificates = stack.format_arn(service="acm", resource="certificate", resource_name="*")
    function.allow(["acm:DescribeCertificate"], [certificates], reason="any issued certificate may match the host")
    function.allow(
        ["kms:DescribeKey"],
        [stack.format_arn(service="kms", resource="key", resource_name="*")],
        {"StringEquals": {"kms:RequestAlias": ETCD_KEY_ALIAS}},
        reason="the key is named by its alias only (kms:RequestAlias)",
    )


def grant_decrypt(function: ClmFunction, key_arns: tuple[str, ...]) -> None:
    """KMS Decrypt of `aws:kms:` config items, with the keys the deployment names only (clm.render.secrets); the
    function learns them from CLM_DECRYPT_KEY_ARNS. Without keys, encrypted items fail to render."""
    if not key_arns:
        return
    function.function.add_environment(DECRYPT_KEYS_ENV, ",".join(key_arns))
    function.allow(["kms:Decrypt"], list(key_arns), config_item_context())


def config_item_context() -> dict[str, dict[str, object]]:
    """The condition that a Decrypt carries a config item's encryption context (its cluster and its name) and no
    other: the function cannot decrypt what the same keys encrypted without it or for other uses."""
    return {
        "ForAllValues:StringEquals": {"kms:EncryptionContextKeys": list(CONFIG_ITEM_CONTEXT)},
        "Null": {f"kms:EncryptionContext:{key}": "false" for key in CONFIG_ITEM_CONTEXT},
    }


def grant_artefact_key(function: ClmFunction, artefacts: s3.IBucket, *, write: bool) -> None:
    """The artefact bucket's KMS key, as S3 uses it for the function's reads (Decrypt) and writes
    (GenerateDataKey), and only through S3 in this region."""
    key = artefacts.encryption_key
    if key is None:
        return
    actions = ["kms:Decrypt", *(["kms:GenerateDataKey"] if write else [])]
    via_s3 = {"StringEquals": {"kms:ViaService": f"s3.{Stack.of(function).region}.amazonaws.com"}}
    function.allow(actions, [key.key_arn], via_s3)


def grant_reconcile(
    function: ClmFunction,
    registry: dynamodb.ITable,
    config: ConfigSource,
    provision: sfn.IStateMachine,
    reconcile_name: str,
) -> None:
    """Registry read, the configuration's version, starting (and counting running) provision executions, and
    listing the running executions of reconcile itself (`reconcile_name`: one loop follows deferred runs)."""
    registry.grant_read_data(function.role)
    config.grant_read(function.role)
    function.allow(["states:StartExecution", "states:ListExecutions"], [provision.state_machine_arn])
    reconcile = Stack.of(function).format_arn(
        service="states",
        resource="stateMachine",
        resource_name=reconcile_name,
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    function.allow(["states:ListExecutions"], [reconcile])


def grant_stacks(
    function: ClmFunction, registry: dynamodb.ITable, artefacts: s3.IBucket, cloudformation_role: iam.IRole
) -> None:
    """Read stacks; create and change only CLM's stacks, through CloudFormation's role; read renderings, store (and let
    CloudFormation read) templates."""
    registry.grant_read_data(function.role)
    stacks = [_stacks(function)]
    role = {"cloudformation:RoleArn": cloudformation_role.role_arn}
    requested = {f"aws:RequestTag/{MANAGED_BY_TAG}": "false"}
    owned = {f"aws:ResourceTag/{MANAGED_BY_TAG}": "false"}
    function.allow(STACK_INSPECT, stacks, reason=STACKS)
    function.allow(
        ["cloudformation:CreateStack"], stacks, {"StringEquals": role, "Null": requested}, reason=OWNED_STACKS
    )
    function.allow(
        ["cloudformation:UpdateStack"],
        stacks,
        {"StringEquals": role, "Null": {**owned, **requested}},
        reason=OWNED_STACKS,
    )
    function.allow(
        ["cloudformation:DeleteStack", "cloudformation:ContinueUpdateRollback"],
        stacks,
        {"StringEquals": role, "Null": owned},
        reason=OWNED_STACKS,
    )
    function.allow(["cloudformation:UpdateTerminationProtection"], stacks, {"Null": owned}, reason=OWNED_STACKS)
    ingress = {f"aws:ResourceTag/{INGRESS_APP_TAG}": INGRESS_CONTROLLER}  # decommission (clm.stacks.ingress)
    function.allow(["cloudformation:DeleteStack"], stacks, {"StringEquals": {**role, **ingress}}, reason=INGRESS_STACKS)
    function.allow(
        ["cloudformation:UpdateTerminationProtection"], stacks, {"StringEquals": ingress}, reason=INGRESS_STACKS
    )
    function.allow(["cloudformation:ListStacks"], ["*"], reason=LIST_STACKS)  # the pools step
    function.allow(
        ["iam:PassRole"],
        [cloudformation_role.role_arn],
        {"StringEquals": {"iam:PassedToService": "cloudformation.amazonaws.com"}},
    )
    function.allow(["s3:GetObject"], [artefacts.arn_for_objects(f"{RENDERINGS_PREFIX}*")], reason=RENDERINGS)
    function.allow(
        ["s3:PutObject", "s3:GetObject"],
        [artefacts.arn_for_objects(f"{TEMPLATES_PREFIX}*")],
        reason="templates over CloudFormation's inline limit, named by content hash",
    )
    grant_artefact_key(function, artefacts, write=True)
    _grant_leftovers(function)
    grant_karpenter_termination(function)


def grant_karpenter_termination(function: ClmFunction) -> None:
    """Terminate instances Karpenter launched (tagged karpenter.sh/nodepool): a Karpenter pool's outdated nodes
    (roll) and a decommissioned cluster's (stacks). The cluster's own tag key names the cluster, so the code checks
    it (clm.stacks.karpenter_pool); IAM keeps CLM away from every instance Karpenter did not launch."""
    instances = Stack.of(function).format_arn(service="ec2", resource="instance", resource_name="*")
    function.allow(
        ["ec2:TerminateInstances"],
        [instances],
        {"Null": {f"ec2:ResourceTag/{KARPENTER_NODEPOOL_TAG}": "false"}},
        reason=f"only instances tagged {KARPENTER_NODEPOOL_TAG} (launched by Karpenter)",
    )


def _grant_leftovers(function: ClmFunction) -> None:
    """After a decommission: delete the VPC CNI's leaked interfaces (tagged with the cluster's name) and, when asked,
    the cluster's volumes. EC2 conditions only on fixed tag keys: the interfaces' and `KubernetesCluster` (a volume's
    cluster, as its provisioner tags it beside kubernetes.io/cluster/<id>); the code checks their values."""
    stack = Stack.of(function)
    function.allow(
        ["ec2:DescribeNetworkInterfaces", "ec2:DescribeVolumes", "ec2:DescribeInstances"],
        ["*"],
        reason="Describe calls of EC2 support no resource scoping",
    )
    function.allow(
        ["ec2:DeleteNetworkInterface"],
        [stack.format_arn(service="ec2", resource="network-interface", resource_name="*")],
        {"Null": {f"ec2:ResourceTag/{CNI_CLUSTER_TAG}": "false"}},
        reason=f"interfaces are found by tag; only those tagged {CNI_CLUSTER_TAG} (the VPC CNI's)",
    )
    function.allow(
        ["ec2:DeleteVolume"],
        [stack.format_arn(service="ec2", resource="volume", resource_name="*")],
        {"Null": {f"ec2:ResourceTag/{VOLUME_CLUSTER_TAG}": "false"}},
        reason=f"a decommissioned cluster's volumes, only when asked; only those tagged {VOLUME_CLUSTER_TAG}",
    )


def grant_kube(function: ClmFunction, registry: dynamodb.ITable, artefacts: s3.IBucket, secret_prefix: str) -> None:
    """Read renderings and the cluster's registry item, reach the cluster's API server."""
    function.allow(["s3:GetObject"], [artefacts.arn_for_objects(f"{RENDERINGS_PREFIX}*")], reason=RENDERINGS)
    grant_artefact_key(function, artefacts, write=False)
    function.allow(["dynamodb:GetItem"], [registry.table_arn])  # the cluster: decommission, cluster_update_block
    _grant_cluster_access(function, secret_prefix)


def grant_roll(function: ClmFunction, registry: dynamodb.ITable, artefacts: s3.IBucket, secret_prefix: str) -> None:
    """Find node pools' groups and instances, change CLM's groups, reach the cluster's API server, read the cluster
    (a roll stops before its next node when cluster_update_block appears)."""
    grant_kube(function, registry, artefacts, secret_prefix)
    function.allow(STACK_READ, [_stacks(function)], reason=STACKS)
    function.allow(["cloudformation:ListStacks"], ["*"], reason=LIST_STACKS)  # resume_all
    function.allow(UNSCOPED_READS, ["*"], reason="Describe calls of EC2 and auto scaling support no resource scoping")
    groups = Stack.of(function).format_arn(
        service="autoscaling", resource="autoScalingGroup", resource_name="*", arn_format=_COLON
    )
    function.allow(
        ASG_CHANGES,
        [groups],
        {"Null": {f"aws:ResourceTag/{NODE_POOL_TAG}": "false"}},
        reason=f"groups are named by CloudFormation; only groups tagged {NODE_POOL_TAG} (node-pool stacks)",
    )
    grant_karpenter_termination(function)
    function.allow(
        ["ec2:DescribeInstanceAttribute"],
        [Stack.of(function).format_arn(service="ec2", resource="instance", resource_name="*")],
        reason="a Karpenter instance's user data, compared with its EC2NodeClass's (instances are found by tag)",
    )


def _grant_cluster_access(function: ClmFunction, secret_prefix: str) -> None:
    """Kubeconfigs/tokens in Secrets Manager under the prefix, or EKS IAM tokens (presigned GetCallerIdentity)."""
    stack = Stack.of(function)
    secrets = stack.format_arn(
        service="secretsmanager", resource="secret", resource_name=f"{secret_prefix}*", arn_format=_COLON
    )
    function.allow(
        ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"],
        [secrets],
        {"Null": {f"secretsmanager:ResourceTag/{CLUSTER_ID_TAG}": "false"}},
        reason=f"cluster credentials are the secrets named under {secret_prefix} (config item kube_auth_secret), "
        f"only those bound to a cluster by tag {CLUSTER_ID_TAG} (the code checks it names the cluster)",
    )
    function.allow(
        ["eks:DescribeCluster"],
        [stack.format_arn(service="eks", resource="cluster", resource_name="*")],
        reason="the EKS cluster is named by each cluster's config (eks_cluster_name)",
    )
    function.allow(["sts:GetCallerIdentity"], ["*"], reason="sts:GetCallerIdentity supports no resource scoping")


def _stacks(function: ClmFunction) -> str:
    return Stack.of(function).format_arn(service="cloudformation", resource="stack", resource_name="*")
