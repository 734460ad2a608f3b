"""Least-privilege permissions of each CLM function, hub side: exactly the calls its steps make (see clm.workflow) to
the hub's own resources (registry, configuration, renderings and artefacts, state machines, cluster secrets).

What the functions do to a cluster's AWS resources (stacks, groups, instances, node files) is granted apart, by
infra.cluster_permissions, to the functions for the hub's own account and region and to the target stacks' roles
for the others (docs/fleet.md).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn

from infra.artefacts import RENDERINGS_PREFIX, TEMPLATES_PREFIX
from infra.config_source import ConfigSource
from infra.context import ClmContext
from infra.functions import ClmFunction
from infra.tags import CLUSTER_ID_TAG

DECRYPT_KEYS_ENV = "CLM_DECRYPT_KEY_ARNS"  # clm.render.secrets.DECRYPT_KEYS_ENV
CONFIG_ITEM_CONTEXT = ("clm:cluster-id", "clm:config-item")  # clm.render.secrets.CLUSTER_KEY, ITEM_KEY
NODE_FILES_BUCKET_ENV = "CLM_NODE_FILES_BUCKET"  # clm.workflow.target_aws.NODE_FILES_BUCKET_ENV
_COLON = ArnFormat.COLON_RESOURCE_NAME
ROLLOUT_KEY_PREFIX = "rollout#"  # clm.rollout.state.KEY_PREFIX: the registry keys of rollouts
RENDERINGS = "renderings are content-addressed objects under renderings/"
TEMPLATES = "templates over CloudFormation's inline limit, named by content hash"


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
    """Where node pools' bootstrap files go (clm.render.node_files; the bucket's grants: infra.cluster_permissions),
    and the run's node-pool rendering (HeadObject first: ListBucket makes a missing object answer 404, not 403)."""
    function.function.add_environment(NODE_FILES_BUCKET_ENV, bucket.bucket_name)
    function.allow(["s3:ListBucket"], [artefacts.bucket_arn])
    function.allow(["s3:GetObject"], [artefacts.arn_for_objects(f"{RENDERINGS_PREFIX}*")], reason=RENDERINGS)


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
    """Registry read, and write of rollouts' items only (never a cluster's), the configuration's version, starting
    (and counting running) provision executions, and listing the running executions of reconcile itself
    (`reconcile_name`: one loop follows deferred runs)."""
    registry.grant_read_data(function.role)
    function.allow(
        ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"],
        [registry.table_arn],
        {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{ROLLOUT_KEY_PREFIX}*"]}},
    )
    config.grant_read(function.role)
    function.allow(["states:StartExecution", "states:ListExecutions"], [provision.state_machine_arn])
    reconcile = Stack.of(function).format_arn(
        service="states",
        resource="stateMachine",
        resource_name=reconcile_name,
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    function.allow(["states:ListExecutions"], [reconcile])


def grant_stacks(function: ClmFunction, registry: dynamodb.ITable, artefacts: s3.IBucket) -> None:
    """Read the registry and renderings, store (and let CloudFormation read) templates over its inline limit."""
    registry.grant_read_data(function.role)
    function.allow(["s3:GetObject"], [artefacts.arn_for_objects(f"{RENDERINGS_PREFIX}*")], reason=RENDERINGS)
    function.allow(
        ["s3:PutObject", "s3:GetObject"],
        [artefacts.arn_for_objects(f"{TEMPLATES_PREFIX}*")],
        reason=TEMPLATES,
    )
    grant_artefact_key(function, artefacts, write=True)


def grant_kube(function: ClmFunction, registry: dynamodb.ITable, artefacts: s3.IBucket, secret_prefix: str) -> None:
    """Read renderings and the cluster's registry item (decommission, cluster_update_block), and the clusters'
    credentials: kubeconfigs or tokens in Secrets Manager under the prefix."""
    function.allow(["s3:GetObject"], [artefacts.arn_for_objects(f"{RENDERINGS_PREFIX}*")], reason=RENDERINGS)
    grant_artefact_key(function, artefacts, write=False)
    function.allow(["dynamodb:GetItem"], [registry.table_arn])
    secrets = Stack.of(function).format_arn(
        service="secretsmanager", resource="secret", resource_name=f"{secret_prefix}*", arn_format=_COLON
    )
    function.allow(
        ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"],
        [secrets],
        {"Null": {f"secretsmanager:ResourceTag/{CLUSTER_ID_TAG}": "false"}},
        reason=f"cluster credentials are the secrets named under {secret_prefix} (config item kube_auth_secret), "
        f"only those bound to a cluster by tag {CLUSTER_ID_TAG} (the code checks it names the cluster)",
    )
