"""The stacks kube-ingress-aws-controller made for a cluster's load balancers, deleted when the cluster is.

CLM's Decommission (provisioner/clusterpy.go) deletes every stack tagged `kubernetes.io/cluster/<name>=owned` (<name>:
api/cluster.go Name(), the alias of a zalando-eks cluster, else its id: clm.model.Cluster.name) except
the main stack (node-pool stacks and the controller's load balancer stacks alike, all at once, listed again until
none is left), then the main stack: the load balancers sit in the cluster stack's subnets and security groups and
would block its deletion. Here the workflow deletes the node-pool stacks, then these, then the cluster stack.

Only the controller's stacks (tagged also `kubernetes:application=kube-ingress-aws-controller`) are deleted: they are
the only stacks CLM did not create that the stacks function's IAM lets it delete. Any other stack tagged with the
cluster and not CLM's is left as it is and reported (`left`). The same sweep deletes the cluster's extra stacks
(cluster/cf-manifests/, clm.stacks.extra), which CLM's Decommission deletes with the others tagged with the cluster.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from clm.model import Cluster
from clm.stacks.delete import start_delete
from clm.stacks.errors import StackFailed
from clm.stacks.events import first_failure
from clm.stacks.extra import ensure_extra, extra_stack_tags
from clm.stacks.names import MANAGED_BY, MANAGED_BY_TAG, OWNED, cluster_tag_key, ingress_tags
from clm.stacks.ownership import ensure_ingress, has_tags
from clm.stacks.status import DELETED, is_in_progress

DELETE_FAILED = "DELETE_FAILED"


@dataclass(frozen=True)
class IngressSweep:
    """The controller's stacks of the cluster still being deleted, and the foreign stacks left alone."""

    deleting: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    @property
    def done(self) -> bool:
        """No controller's stack is left."""
        return not self.deleting

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for Step Functions payloads."""
        return {**asdict(self), "done": self.done}


def cluster_stacks(cfn: Any, cluster_name: str) -> list[dict[str, Any]]:
    """Every live stack tagged `kubernetes.io/cluster/<name>=owned` (CLM's listClusterStacks: Cluster.name), as
    DescribeStacks returns it (every page)."""
    wanted = {cluster_tag_key(cluster_name): OWNED}
    return [
        stack
        for page in cfn.get_paginator("describe_stacks").paginate()
        for stack in page["Stacks"]
        if stack["StackStatus"] != DELETED and has_tags(stack, wanted)
    ]


def sweep_ingress_stacks(cfn: Any, cluster: Cluster, role_arn: str | None, *, check: bool) -> IngressSweep:
    """Start deleting every controller's stack and every extra stack of the cluster not being deleted (with the
    ClusterStackRole, as CLM's own stacks); `check`: a stack whose deletion failed raises StackFailed naming it and its
    resource (without `check`, a failed deletion is started again)."""
    cluster_id, name_tag = cluster.id, cluster.name
    deleting, left = [], []
    for stack in cluster_stacks(cfn, name_tag):
        name, status = stack["StackName"], stack["StackStatus"]
        ensure = partial(ensure_ingress, cluster_name=name_tag)
        if has_tags(stack, {MANAGED_BY_TAG: MANAGED_BY}):
            if not has_tags(stack, extra_stack_tags(name_tag)):
                continue  # CLM's cluster and node-pool stacks: deleted by their own steps
            ensure = partial(ensure_extra, cluster_name=name_tag)
        elif not has_tags(stack, ingress_tags(name_tag)):
            left.append(name)
            continue
        if check and status == DELETE_FAILED:
            raise StackFailed(cluster_id, name, status, first_failure(cfn, stack), stack.get("StackStatusReason", ""))
        busy = is_in_progress(status)  # e.g. an update of the controller's: deleted once it settles
        if busy or start_delete(cfn, name, cluster_id, role_arn, ensure=ensure).action != "absent":
            deleting.append(name)
    return IngressSweep(sorted(deleting), sorted(left))
