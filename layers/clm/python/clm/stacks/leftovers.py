"""What a decommissioned cluster's stacks leave behind: the VPC CNI's network interfaces and, when asked, volumes.

Both are found by CLM's cluster name (api/cluster.go Name(): the alias of a zalando-eks cluster, else its id).
CLM (provisioner/aws.go DeleteLeakedAWSVPCCNIENIs): interfaces tagged `cluster.k8s.amazonaws.com/name=<name>` in
status `available`. CLM (provisioner/clusterpy.go removeEBSVolumes, with --remove-volumes): volumes tagged
`kubernetes.io/cluster/<name>=owned`; available ones are deleted, deleting/deleted ones skipped, any other state is an
error (CLM retries for 5 minutes). Here a volume is deleted only if it also carries `KubernetesCluster=<name>`, as
the EBS CSI driver and the in-tree provisioner tag with the cluster tag (the fixed key IAM's condition names:
infra/cluster_permissions.py); others are named.
Only after clm.stacks.provenance proved the cluster CLM's (and, for zalando-eks, that its alias is its own:
clm.eks.ensure_alias_owned).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from clm.errors import ClmError
from clm.model import Cluster
from clm.stacks.cfn import error_code
from clm.stacks.names import OWNED, cluster_tag_key
from clm.stacks.provenance import ensure_filter_value

CNI_CLUSTER_TAG = "cluster.k8s.amazonaws.com/name"
VOLUME_CLUSTER_TAG = "KubernetesCluster"
REMOVE_VOLUMES_ITEM = "remove_volumes"  # "true": CLM's --remove-volumes, per cluster
_GONE = {"InvalidNetworkInterfaceID.NotFound", "InvalidVolume.NotFound"}
_DELETABLE_OR_GONE = {"available", "deleting", "deleted"}


class VolumesInUse(ClmError):
    """Volumes of the cluster are still attached (or being created); the workflow retries."""

    asl_name = "VolumesInUse"


def delete_leaked_interfaces(ec2: Any, cluster: Cluster) -> list[str]:
    """Delete the cluster's VPC CNI interfaces left `available`; returns their ids."""
    name = ensure_filter_value(cluster.name, "the cluster's name (alias or id)", cluster.id)
    filters = [
        {"Name": f"tag:{CNI_CLUSTER_TAG}", "Values": [name]},
        {"Name": "status", "Values": ["available"]},
    ]
    pages = ec2.get_paginator("describe_network_interfaces").paginate(Filters=filters)
    ids = [eni["NetworkInterfaceId"] for page in pages for eni in page["NetworkInterfaces"]]
    for eni in ids:
        _ignore_gone(lambda eni=eni: ec2.delete_network_interface(NetworkInterfaceId=eni))
    return ids


def delete_volumes(ec2: Any, cluster: Cluster) -> tuple[list[str], list[str]]:
    """Delete the cluster's available volumes; returns their ids, and those left alone for want of
    `KubernetesCluster=<name>` (each with why). Raises VolumesInUse (deleting nothing more) naming the volumes in
    another state than available, deleting or deleted."""
    cluster_id, name = cluster.id, ensure_filter_value(cluster.name, "the cluster's name (alias or id)", cluster.id)
    filters = [{"Name": f"tag:{cluster_tag_key(name)}", "Values": [OWNED]}]
    found = [v for page in ec2.get_paginator("describe_volumes").paginate(Filters=filters) for v in page["Volumes"]]
    volumes = [v for v in found if _tag(v, VOLUME_CLUSTER_TAG) == name]
    left = [f"{v['VolumeId']} (no {VOLUME_CLUSTER_TAG}={name} tag)" for v in found if v not in volumes]
    busy = [
        f"{v['VolumeId']} ({v['State']})" for v in volumes if v["State"] not in {"available", "deleting", "deleted"}
    ]
    if busy:
        raise VolumesInUse(f"cluster {cluster_id}: volumes not available to delete: {', '.join(busy)}")
    deleted = [v["VolumeId"] for v in volumes if v["State"] == "available"]
    for volume in deleted:
        _ignore_gone(lambda volume=volume: ec2.delete_volume(VolumeId=volume))
    return deleted, left


def _tag(resource: dict[str, Any], key: str) -> str | None:
    return next((tag["Value"] for tag in resource.get("Tags", []) if tag["Key"] == key), None)


def _ignore_gone(call: Any) -> None:
    try:
        call()
    except ClientError as exc:
        if error_code(exc) not in _GONE:
            raise
