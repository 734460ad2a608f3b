"""What a run would do to a rendered cluster's stacks and node pools, read without changing anything.

Every stack gets its action and diff (diff.py), in a run's order (CLM's etcd stack first, when the rendering has
one; the extra stacks of cluster/cf-manifests/ after the cluster stack, then those cf-deletions.yaml deletes); every
node pool its instances, each outdated now (inventory.py) or after the stack update (launch.py), with the reasons; a
Karpenter pool its instances judged against its rendered EC2NodeClass and Karpenter's drift verdicts
(karpenter_pool.py). Node-pool stacks of pools gone from the registry are deleted by a run after draining all their
instances.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from clm.model import Cluster
from clm.render.cf_manifests import CF_DELETIONS, stack_name
from clm.render.renderer import RenderedCluster
from clm.stacks.cfn import describe_stack
from clm.stacks.diff import StackDiff, stack_diff
from clm.stacks.errors import NodePoolInventoryError, StackNotOwned
from clm.stacks.etcd import etcd_stack_spec
from clm.stacks.extra import ensure_extra, extra_stack_spec
from clm.stacks.inventory import GroupInventory, InstanceInfo, NodePoolInventory, node_pool_inventory
from clm.stacks.karpenter_pool import desired_config, karpenter_pool_inventory
from clm.stacks.removed import removed_node_pools
from clm.stacks.spec import cluster_stack_spec, node_pool_stack_spec

REMOVED_REASON = "the node pool is gone from the cluster"
UPDATE_REASON = "the stack update changes what the group launches (see the stack's launch changes)"


@dataclass(frozen=True)
class PlannedInstance:
    """An instance of a node pool and, when a run would replace it, why."""

    id: str
    az: str
    lifecycle_state: str
    instance_type: str
    launch_template_version: str
    reasons: list[str] = field(default_factory=list)
    group: str = ""  # its auto scaling group ("" for Karpenter's)

    @property
    def outdated(self) -> bool:
        """Whether a run would replace the instance."""
        return bool(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return {**asdict(self), "outdated": self.outdated}


@dataclass(frozen=True)
class PoolPlan:
    """A node pool's groups and instances as a run would find them (`asg_name` names every group, `groups` has each
    one's zones and sizes); `error` when a group cannot be read; `karpenter` for a Karpenter pool (no stack nor group:
    its instances are Karpenter's)."""

    node_pool: str
    stack_name: str
    removed: bool = False
    asg_name: str = ""
    desired: int = 0
    instances: list[PlannedInstance] = field(default_factory=list)
    error: str = ""
    karpenter: bool = False
    groups: list[GroupInventory] = field(default_factory=list)

    @property
    def outdated(self) -> list[PlannedInstance]:
        """The instances a run would replace (drain, then terminate)."""
        return [instance for instance in self.instances if instance.outdated]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return {
            **{key: value for key, value in asdict(self).items() if key != "instances"},
            "instances": [instance.to_dict() for instance in self.instances],
            "outdated": len(self.outdated),
        }


@dataclass(frozen=True)
class StacksPlan:
    """The stacks and node pools of one cluster, in the order a run works on them."""

    cluster_id: str
    stacks: list[StackDiff]
    pools: list[PoolPlan]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return {
            "cluster": self.cluster_id,
            "stacks": [stack.to_dict() for stack in self.stacks],
            "node_pools": [pool.to_dict() for pool in self.pools],
        }


def plan_stacks(
    rendered: RenderedCluster, cfn: Any, autoscaling: Any, ec2: Any, drifted: Mapping[str, str] | None = None
) -> StacksPlan:
    """CLM's etcd stack (when the rendering has one), the cluster stack, the extra stacks of cluster/cf-manifests/ and
    the stacks cf-deletions.yaml deletes, then every node pool's stack and instances,
    then the Karpenter pools' instances (`drifted`: instance id -> why Karpenter calls
    its NodeClaim drifted), then the pools a run would remove."""

    cluster = rendered.cluster

    def inventory(stack_name: str, pool: str) -> NodePoolInventory:
        return node_pool_inventory(
            cfn, autoscaling, ec2, stack_name, cluster_id=cluster.id, name=cluster.name, pool=pool
        )

    first = [etcd_stack_spec(rendered)] if rendered.etcd_stack is not None else []
    extra = [extra_stack_spec(rendered, stack_name(stack.template)) for stack in rendered.extra_stacks]
    stacks = [stack_diff(cfn, spec) for spec in (*first, cluster_stack_spec(rendered), *extra)]
    stacks += cf_deletion_diffs(cfn, cluster, rendered.cf_deletions.pre_apply + rendered.cf_deletions.post_apply)
    pools = []
    for pool in cluster.asg_pools:  # Karpenter pools have no stack
        diff = stack_diff(cfn, node_pool_stack_spec(rendered, pool.name))
        stacks.append(diff)
        if diff.action in ("create", "recreate"):  # no group (left) to look at
            pools.append(PoolPlan(pool.name, diff.stack_name))
            continue
        reasons = [UPDATE_REASON] if diff.launch_changes else []
        pools.append(_pool_plan(inventory, pool.name, diff.stack_name, reasons))
    for pool in cluster.karpenter_pools:
        desired = desired_config(rendered.node_pool_manifests.get(pool.name, []), pool.name)
        found = karpenter_pool_inventory(ec2, cluster.id, pool.name, desired, drifted or {})
        planned = [_planned(instance, []) for instance in found.instances]
        pools.append(PoolPlan(pool.name, "", desired=found.desired, instances=planned, karpenter=True))
    for gone in removed_node_pools(cfn, cluster):
        stacks.append(StackDiff(gone.stack_name, gone.node_pool, "", "delete", gone.status))
        pools.append(_pool_plan(inventory, gone.node_pool, gone.stack_name, [REMOVED_REASON], removed=True))
    return StacksPlan(cluster.id, stacks, pools)


def cf_deletion_diffs(cfn: Any, cluster: Cluster, names: list[str]) -> list[StackDiff]:
    """cf-deletions.yaml's stacks that exist: each deleted by a run ("delete"), or, when it is not an extra stack CLM
    made for the cluster, the run stops there ("attention", with why)."""
    diffs = []
    for name in names:
        stack = describe_stack(cfn, name)
        if stack is None:
            continue
        try:
            ensure_extra(stack, cluster.id, cluster.name)
        except StackNotOwned as exc:
            diffs.append(StackDiff(name, None, CF_DELETIONS, "attention", stack["StackStatus"], problem=exc.message))
            continue
        diffs.append(StackDiff(name, None, CF_DELETIONS, "delete", stack["StackStatus"]))
    return diffs


def _pool_plan(
    inventory: Callable[[str, str], NodePoolInventory],
    name: str,
    stack_name: str,
    extra_reasons: list[str],
    *,
    removed: bool = False,
) -> PoolPlan:
    """The pool's instances, each with the inventory's reasons and `extra_reasons`."""
    try:
        found = inventory(stack_name, name)
    except NodePoolInventoryError as exc:
        return PoolPlan(name, stack_name, removed, error=str(exc))
    return PoolPlan(
        node_pool=name,
        stack_name=stack_name,
        removed=removed,
        asg_name=found.asg_name,
        desired=found.desired,
        instances=[_planned(instance, extra_reasons) for instance in found.instances],
        groups=found.groups,
    )


def _planned(instance: InstanceInfo, extra_reasons: list[str]) -> PlannedInstance:
    return PlannedInstance(
        id=instance.id,
        az=instance.az,
        lifecycle_state=instance.lifecycle_state,
        instance_type=instance.instance_type,
        launch_template_version=instance.launch_template_version,
        reasons=[*instance.outdated_reasons, *extra_reasons],
        group=instance.group,
    )
