"""A Karpenter node pool's EC2 instances, each judged up to date or outdated, and their termination.

A Karpenter pool has no auto scaling group: its instances are those tagged `kubernetes.io/cluster/<name>=owned` and
`karpenter.sh/nodepool=<pool>` (Karpenter tags every instance it launches so; <name>: the cluster's name as in CLM's
aws_ec2.go, api/cluster.go Name(): clm.model.Cluster.name, the alias of a zalando-eks cluster, else the id). As
CLM's EC2NodePoolBackend (pkg/updatestrategy/aws_ec2.go, `InstanceConfigUpToDate`), an instance is outdated when

- its image is not among the ids of the EC2NodeClass's `amiSelectorTerms`;
- a tag of the EC2NodeClass is missing on it or has another value (extra tags do not count: EC2 and Karpenter add
  their own);
- its user data differs from the EC2NodeClass's. Only for `amiFamily: Custom`, where Karpenter passes the user data
  unchanged: for the other families it merges its own bootstrap in, so CLM's comparison would find every node
  outdated on every run (Zalando's classes are Custom);

and, beyond CLM, when Karpenter reports the instance's NodeClaim Drifted (the NodePool's template changed: labels,
taints, requirements, kubelet settings). The EC2NodeClass judged against is the pool's rendered one, which a run
applies before it rolls the pool, so `clm plan` shows what the run will replace.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from clm.errors import ClmError
from clm.stacks.inventory import InstanceInfo, NodePoolInventory
from clm.stacks.names import cluster_tag_key

if TYPE_CHECKING:
    from clm.render.manifests import Manifest

NODEPOOL_TAG = "karpenter.sh/nodepool"  # on every instance Karpenter (v1beta1 and later) launches
LIVE_STATES = ("pending", "running")
CLUSTER_LIVE_STATES = (*LIVE_STATES, "stopping", "stopped")  # what a decommission terminates
_LIFECYCLE = {"pending": "Pending", "running": "InService"}  # EC2's states in the auto scaling group's words
_USER_DATA_CACHE_SIZE = 10_000
_user_data: dict[str, bytes] = {}  # instance id -> user data: fixed while the instance runs (warm containers)


class KarpenterInstanceRefused(ClmError):
    """An instance to terminate is not one Karpenter launched for this cluster's pool: it is left running."""

    asl_name = "KarpenterInstanceRefused"

    def __init__(self, cluster_id: str, pool: str, instance_id: str):
        self.cluster_id, self.pool, self.instance_id = cluster_id, pool, instance_id
        super().__init__(
            f"cluster {cluster_id}: Karpenter node pool {pool}: instance {instance_id} is not tagged "
            f"{cluster_tag_key(cluster_id)}=owned and {NODEPOOL_TAG}={pool}: not terminated"
        )


@dataclass(frozen=True)
class InstanceConfig:
    """What a pool's instances should have been launched with (CLM's `InstanceConfig`), from its EC2NodeClass.

    `user_data` None and `image_ids` empty mean "not compared" (not a Custom AMI family; AMIs chosen by tags,
    name or alias, which Karpenter resolves itself and reports as drift).
    """

    node_class: str
    user_data: str | None = None
    image_ids: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)

    def outdated_reasons(self, instance: Mapping[str, Any], user_data: bytes | None) -> list[str]:
        """Why the described instance differs from this configuration (none: up to date)."""
        reasons = []
        image = instance.get("ImageId", "")
        if self.image_ids and image not in self.image_ids:
            reasons.append(f"image {image}, EC2NodeClass {self.node_class} selects {', '.join(self.image_ids)}")
        tags = _tags(instance)
        for key, value in sorted(self.tags.items()):
            if tags.get(key) != value:
                found = "missing" if key not in tags else f"{tags[key]!r}"
                reasons.append(f"tag {key} {found}, EC2NodeClass {self.node_class} sets {value!r}")
        if self.user_data is not None and user_data is not None and user_data != self.user_data.encode():
            reasons.append(f"user data differs from EC2NodeClass {self.node_class}'s")
        return reasons


def desired_config(manifests: Sequence[Manifest], pool: str) -> InstanceConfig | None:
    """The configuration of the EC2NodeClass that the pool's NodePool refers to, from the pool's rendered objects;
    None when the pool renders no NodePool of its name or its class is not among its objects."""
    by_kind = {(m.kind, m.name): m.body for m in manifests}
    nodepool = by_kind.get(("NodePool", pool))
    if nodepool is None:
        return None
    template = (nodepool.get("spec") or {}).get("template") or {}
    ref = ((template.get("spec") or {}).get("nodeClassRef") or {}).get("name", "")
    node_class = by_kind.get(("EC2NodeClass", ref))
    if node_class is None:
        return None
    spec = node_class.get("spec") or {}
    custom = spec.get("amiFamily") == "Custom"
    terms = spec.get("amiSelectorTerms") or []
    ids = tuple(term["id"] for term in terms if term.get("id"))
    return InstanceConfig(
        node_class=ref,
        user_data=spec.get("userData", "") if custom else None,
        image_ids=ids if len(ids) == len(terms) else (),
        tags={str(k): str(v) for k, v in (spec.get("tags") or {}).items()},
    )


def disruption_budget(manifests: Sequence[Manifest], pool: str, nodes: int) -> int | None:
    """How many of the pool's `nodes` its rendered NodePool's disruption budgets let go at once (Karpenter's rule:
    the smallest `nodes` of the budgets, a percentage of the pool's nodes rounded up); None without budgets.

    Budgets with a `schedule` (active only in their cron windows) are left out: CLM does not evaluate cron.
    """
    nodepool = next((m.body for m in manifests if (m.kind, m.name) == ("NodePool", pool)), None)
    budgets = ((nodepool or {}).get("spec") or {}).get("disruption", {}).get("budgets") or []
    allowed = []
    for budget in budgets:
        if budget.get("schedule"):
            continue
        value = str(budget.get("nodes", "10%"))
        allowed.append(math.ceil(nodes * int(value[:-1]) / 100) if value.endswith("%") else int(value))
    return min(allowed) if allowed else None


def karpenter_pool_inventory(
    ec2: Any, cluster_name: str, pool: str, desired: InstanceConfig | None, drifted: Mapping[str, str]
) -> NodePoolInventory:
    """The pool's live instances, each judged against `desired` and Karpenter's drift verdicts (`drifted`: instance
    id -> reason). Its `desired` size is the number of live instances: Karpenter, not a group, decides it."""
    described = _instances(ec2, cluster_name, [{"Name": f"tag:{NODEPOOL_TAG}", "Values": [pool]}], LIVE_STATES)
    instances = []
    for instance in described:
        data = _instance_user_data(ec2, instance["InstanceId"]) if desired and desired.user_data is not None else None
        reasons = desired.outdated_reasons(instance, data) if desired else []
        if instance["InstanceId"] in drifted:
            reasons.append(drifted[instance["InstanceId"]])
        instances.append(_info(instance, reasons))
    return NodePoolInventory(
        stack_name="",
        asg_name="",
        launch_template_id="",
        launch_template_name=desired.node_class if desired else "",
        launch_template_version="",
        instance_types=[],
        spot=None,
        desired=len(instances),
        min=0,
        max=len(instances),
        instances=instances,
    )


def pools_with_instances(ec2: Any, cluster_name: str) -> set[str]:
    """The Karpenter NodePools that have live instances of the cluster (by their tag karpenter.sh/nodepool)."""
    found = _instances(ec2, cluster_name, [{"Name": "tag-key", "Values": [NODEPOOL_TAG]}], LIVE_STATES)
    return {_tags(instance)[NODEPOOL_TAG] for instance in found}


def terminate_pool_instance(ec2: Any, cluster_name: str, pool: str, instance_id: str) -> str:
    """Terminate one instance of the Karpenter pool; its new state, or "already" when it is gone or going.

    Raises KarpenterInstanceRefused for an instance not tagged as launched by Karpenter for this cluster and pool.
    """
    try:
        reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "InvalidInstanceID.NotFound":
            return "already"
        raise
    instance = next((i for r in reservations for i in r["Instances"]), None)
    if instance is None or instance["State"]["Name"] not in CLUSTER_LIVE_STATES:
        return "already"
    tags = _tags(instance)
    if tags.get(cluster_tag_key(cluster_name)) != "owned" or tags.get(NODEPOOL_TAG) != pool:
        raise KarpenterInstanceRefused(cluster_name, pool, instance_id)
    changes = ec2.terminate_instances(InstanceIds=[instance_id])["TerminatingInstances"]
    return changes[0]["CurrentState"]["Name"] if changes else "already"


def terminate_cluster_instances(ec2: Any, cluster_name: str) -> list[str]:
    """Decommission (CLM's DecommissionKarpenterNodes): terminate every instance Karpenter launched for the cluster
    that is not terminating yet; return their ids (none left: done)."""
    found = _instances(ec2, cluster_name, [{"Name": "tag-key", "Values": [NODEPOOL_TAG]}], CLUSTER_LIVE_STATES)
    ids = [instance["InstanceId"] for instance in found]
    for start in range(0, len(ids), 1000):  # TerminateInstances takes up to 1,000 ids
        ec2.terminate_instances(InstanceIds=ids[start : start + 1000])
    return ids


def _instances(ec2: Any, cluster_name: str, filters: list[dict[str, Any]], states: Sequence[str]) -> list[dict]:
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": f"tag:{cluster_tag_key(cluster_name)}", "Values": ["owned"]},
            *filters,
            {"Name": "instance-state-name", "Values": list(states)},
        ]
    )
    found = [i for page in pages for r in page["Reservations"] for i in r["Instances"]]
    return sorted(found, key=lambda i: (i["LaunchTime"], i["InstanceId"]))


def _instance_user_data(ec2: Any, instance_id: str) -> bytes:
    """The instance's user data (decoded), read once per instance and warm container."""
    if instance_id not in _user_data:
        if len(_user_data) >= _USER_DATA_CACHE_SIZE:
            _user_data.clear()
        value = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")["UserData"]
        _user_data[instance_id] = base64.b64decode(value.get("Value") or "")
    return _user_data[instance_id]


def _info(instance: Mapping[str, Any], reasons: list[str]) -> InstanceInfo:
    return InstanceInfo(
        id=instance["InstanceId"],
        az=instance["Placement"]["AvailabilityZone"],
        lifecycle_state=_LIFECYCLE[instance["State"]["Name"]],
        health="Healthy",
        instance_type=instance.get("InstanceType", ""),
        spot=instance.get("InstanceLifecycle") == "spot",
        launch_template_id="",
        launch_template_version="",
        outdated=bool(reasons),
        outdated_reasons=reasons,
        launch_time=instance["LaunchTime"].isoformat(),
    )


def _tags(instance: Mapping[str, Any]) -> dict[str, str]:
    return {tag["Key"]: tag["Value"] for tag in instance.get("Tags") or []}
