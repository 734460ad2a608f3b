"""The steps of the `stacks` function: start and check the cluster's CloudFormation stacks.

Every step is one bounded call; the state machine waits between `check`s and follows each result's
`next_step`. Templates are read from the stored rendering, never carried in the payload.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

from clm.aws import client
from clm.model import Cluster, NodePool
from clm.registry.dynamodb import DynamoRegistry
from clm.stacks.delete import start_delete
from clm.stacks.deploy import check, start
from clm.stacks.names import cluster_stack_name, node_pool_stack_name, owned_tags
from clm.stacks.ownership import ensure_owned as _ensure_owned
from clm.stacks.removed import node_pool_stacks, removed_node_pools
from clm.stacks.spec import cluster_stack_spec, node_pool_stack_spec
from clm.workflow import target_aws
from clm.workflow.maintenance import fleet_freezes, hold_stack_update
from clm.workflow.settings import Settings
from clm.workflow.update_block import ensure_not_blocked


def start_stack(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, node_pool?, stack?}` -> create or update the node pool's stack, CLM's etcd stack
    (`stack.etcd`), an extra stack of cluster/cf-manifests/ (`stack.cf_manifest`: its name), or else the cluster
    stack (a StartResult: follow its `next_step`). An update that may replace instances waits for the cluster's
    maintenance window (MaintenanceWindowClosed: clm.workflow.maintenance)."""
    from clm.workflow.render_step import load_rendering  # YAML and the renderer's types: this step's alone

    settings = Settings.from_env()
    rendered = load_rendering(client("s3"), settings.artefact_bucket, event["rendering"])
    pool, stack = event.get("node_pool"), event.get("stack") or {}
    if stack.get("etcd"):
        from clm.stacks.etcd import etcd_stack_spec

        spec = etcd_stack_spec(rendered)
    elif stack.get("cf_manifest"):
        from clm.stacks.extra import extra_stack_spec

        spec = extra_stack_spec(rendered, stack["cf_manifest"])
    else:
        spec = node_pool_stack_spec(rendered, pool) if pool else cluster_stack_spec(rendered)
    where = target_aws.of_event(event)
    bucket = where.templates_bucket(settings.artefact_bucket)
    registry = DynamoRegistry(client("dynamodb"), settings.registry_table)
    hold = partial(hold_stack_update, cluster=partial(registry.get, spec.cluster_id), freezes=fleet_freezes)
    result = start(
        where.client("cloudformation"),
        where.client("s3"),
        spec,
        template_bucket=bucket,
        role_arn=where.stack_role,
        before_update=lambda updated: hold(updated, now=datetime.now(UTC)),
    )
    return result.to_dict()


def cf_deletions(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, phase, retried}` -> one step of the phase's deletions of cf-deletions.yaml (`phase`
    `cf_pre_apply` or `cf_post_apply`), each stack deleted in turn with CloudFormation's service role, only if it is
    an extra stack CLM made for the cluster (clm.stacks.extra); `done` once none is left."""
    from clm.stacks.extra import delete_in_order
    from clm.workflow.render_step import CF_PHASES, load_rendering

    phase = event["phase"]
    if phase not in CF_PHASES:
        raise ValueError(f"unknown cf-deletions phase {phase!r} (expected one of {', '.join(CF_PHASES)})")
    rendered = load_rendering(client("s3"), Settings.from_env().artefact_bucket, event["rendering"])
    names = getattr(rendered.cf_deletions, phase.removeprefix("cf_"))
    where = target_aws.of_event(event)
    cfn = where.client("cloudformation")
    progress = delete_in_order(cfn, rendered.cluster, names, where.stack_role, event.get("retried") or ())
    return {"phase": phase, **progress.to_dict()}


def check_stack(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, stack_name}` -> the stack's state; a failed stack raises StackFailed naming the resource."""
    state = check(target_aws.of_event(event).client("cloudformation"), event["stack_name"])
    state.raise_if_failed(event["cluster_id"])
    return state.to_dict()


def pools(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, decommission, apply_only?}` -> the pools to work on, in order, as
    `{node_pool, stack_name, removing, drain, karpenter}`; with `apply_only` (clm.workflow.apply_only) none is rolled,
    `not_rolled` names the auto scaling group pools whose outdated instances the run counts (none in a new cluster).

    Provision: every registry pool is rolled (pools_to_roll), then the stacks of removed pools are drained and
    deleted, then the nodes of removed Karpenter pools are drained and their objects deleted.
    Decommission: every node-pool stack is deleted without draining; `cluster_stack` names the cluster stack, deleted
    after them and after the ingress controller's stacks (ingress_stacks).
    """
    settings = Settings.from_env()
    cluster = DynamoRegistry(client("dynamodb"), settings.registry_table).get(event["cluster_id"])
    where = target_aws.of_event(event)
    cfn = where.client("cloudformation")
    if event.get("decommission"):
        stacks = node_pool_stacks(cfn, cluster.id, cluster.name)
        items = [_pool(stack.node_pool, stack.stack_name, True, False) for stack in stacks]
        return {"pools": items, "cluster_stack": cluster_stack_name(cluster)}
    ensure_not_blocked(cluster, "before rolling the node pools")
    removed = [_pool(stack.node_pool, stack.stack_name, True, True) for stack in removed_node_pools(cfn, cluster)]
    if event.get("apply_only"):  # CLM's provisionNodePoolGroup skips the update; removed pools go as always
        pools_of = cluster.asg_pools
        kept = [{"node_pool": p.name, "stack_name": node_pool_stack_name(cluster.id, p.name)} for p in pools_of]
        gone = _removed_karpenter_pools(cluster, where)
        return {"pools": removed + gone, "apply_only": True, "not_rolled": [] if cluster.is_new else kept}
    rolled = [
        _pool(pool.name, "", False, True, karpenter=True)
        if pool.is_karpenter
        else _pool(pool.name, node_pool_stack_name(cluster.id, pool.name), False, True)
        for pool in pools_to_roll(cluster)
    ]
    return {"pools": rolled + removed + _removed_karpenter_pools(cluster, where), "apply_only": False}


def _removed_karpenter_pools(cluster: Cluster, where: target_aws.TargetAws) -> list[dict[str, Any]]:
    """Karpenter pools whose instances run but that are gone from the registry, to be drained (the roll leaves alone
    a NodePool CLM did not apply)."""
    from clm.stacks.karpenter_pool import pools_with_instances

    gone = pools_with_instances(where.client("ec2"), cluster.name) - {pool.name for pool in cluster.karpenter_pools}
    return [_pool(name, "", True, True, karpenter=True) for name in sorted(gone)]


def pools_to_roll(cluster: Cluster) -> list[NodePool]:
    """The pools a provision rolls, as CLM groups them (provisioner/clusterpy.go groupNodePools): none in a new
    cluster's first run (lifecycle requested or creating: every node is new, as in CLM's provisionNodePoolGroup);
    the auto scaling group pools, masters first (a stable sort); then the Karpenter pools (their objects are applied
    by then; their instances are replaced through EC2)."""
    if cluster.is_new:
        return []
    return [*sorted(cluster.asg_pools, key=lambda pool: not pool.is_master), *cluster.karpenter_pools]


def _pool(node_pool: str, stack_name: str, removing: bool, drain: bool, *, karpenter: bool = False) -> dict[str, Any]:
    """A pool item of the roll workflow (a Karpenter pool has no stack: `karpenter` tells its steps)."""
    return {
        "node_pool": node_pool,
        "stack_name": stack_name,
        "removing": removing,
        "drain": drain,
        "karpenter": karpenter,
    }


def delete_stack(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, stack_name}` -> start deleting the stack (termination protection off first) with
    CloudFormation's service role, if it carries the ownership tags CLM created it with: the cluster stack the
    cluster id's, any other the cluster name's (clm.stacks.names)."""
    cluster = _cluster(event)
    name = event["stack_name"]
    owner = cluster.id if name == cluster_stack_name(cluster) else cluster.name
    where = target_aws.of_event(event)
    ensure = partial(_ensure_owned, wanted=owned_tags(owner))
    return start_delete(where.client("cloudformation"), name, cluster.id, where.stack_role, ensure).to_dict()


def _cluster(event: dict[str, Any]) -> Cluster:
    """The event's cluster, as the registry has it now."""
    return DynamoRegistry(client("dynamodb"), Settings.from_env().registry_table).get(event["cluster_id"])


def ingress_stacks(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, check}` -> decommission, after the node-pool stacks: start deleting the stacks
    kube-ingress-aws-controller made for the cluster's load balancers (clm.stacks.ingress), with CloudFormation's
    service role; `done` once none is left, `left` the cluster's other foreign stacks. With `check`, a failed
    deletion raises StackFailed naming the stack."""
    from clm.stacks.ingress import sweep_ingress_stacks

    where = target_aws.of_event(event)
    cfn = where.client("cloudformation")
    return sweep_ingress_stacks(cfn, _cluster(event), where.stack_role, check=bool(event.get("check"))).to_dict()


def verify_provisioned(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id}` -> decommission, before anything else: `{proof}` that CLM provisioned the cluster (its cluster
    stack with CLM's ownership tags, alive or deleted) and, for a zalando-eks cluster, that its alias (the name its
    resources are tagged with) is no other registry cluster's name (AliasNotUnique) nor another cluster's EKS
    cluster's; ClusterNotManaged otherwise (clm.stacks.provenance, clm.workflow.eks_hook)."""
    from clm.stacks.provenance import ensure_provisioned

    cluster = _cluster(event)
    where = target_aws.of_event(event)
    proof = ensure_provisioned(where.client("cloudformation"), cluster)
    if cluster.is_eks:
        from clm.workflow.eks_hook import ensure_alias_owned, ensure_name_unique

        registry = DynamoRegistry(client("dynamodb"), Settings.from_env().registry_table)
        ensure_name_unique(registry.list_clusters(), cluster)
        proof = f"{proof}; {ensure_alias_owned(where.client('eks'), cluster)}"
    return {"proof": proof}


def clean_up(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id}` -> after a decommission deleted the stacks of a cluster CLM provisioned (proved again): delete
    the VPC CNI's leaked network interfaces and, when the cluster's config item remove_volumes is "true" (CLM's
    --remove-volumes), its volumes (VolumesInUse while some are attached: the state machine retries)."""
    from clm.stacks.leftovers import REMOVE_VOLUMES_ITEM, delete_leaked_interfaces, delete_volumes
    from clm.stacks.provenance import ensure_provisioned

    cluster = _cluster(event)
    where = target_aws.of_event(event)
    ensure_provisioned(where.client("cloudformation"), cluster)
    ec2 = where.client("ec2")
    interfaces = delete_leaked_interfaces(ec2, cluster)
    if cluster.config_items.get(REMOVE_VOLUMES_ITEM) != "true":
        return {"interfaces": interfaces, "volumes": None}
    volumes, left = delete_volumes(ec2, cluster)
    return {"interfaces": interfaces, "volumes": volumes, "volumes_left": left}


def terminate_karpenter(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id}` -> decommission, after kube-system (where Karpenter runs) is scaled down: terminate the instances
    Karpenter launched for the cluster (CLM's DecommissionKarpenterNodes); `done` once none is left running."""
    from clm.stacks.karpenter_pool import terminate_cluster_instances

    terminated = terminate_cluster_instances(target_aws.of_event(event).client("ec2"), _cluster(event).name)
    return {"terminated": terminated, "done": not terminated}


STEPS = {
    "start_stack": start_stack,
    "check_stack": check_stack,
    "cf_deletions": cf_deletions,
    "pools": pools,
    "delete_stack": delete_stack,
    "ingress_stacks": ingress_stacks,
    "verify_provisioned": verify_provisioned,
    "clean_up": clean_up,
    "terminate_karpenter": terminate_karpenter,
}
