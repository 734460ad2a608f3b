"""A cluster's extra stacks (cluster/cf-manifests/: clm.render.cf_manifests) and cf-deletions.yaml's deletions.

CLM (provisioner/aws.go applyCFManifest) creates each as the stack its template's `Metadata.StackName` names, tagged
`kubernetes.io/cluster/<Name()>=owned` over the template's `Metadata.Tags`, with termination protection, and updates it
whatever it is; CFDeletions (provisioner/clusterpy.go) deletes any stack of the account by name. Here an extra stack
also carries CLM's `clm:managed-by=clm` (the stacks function's IAM changes no other stack) and `clm:cf-manifest=true`,
and both are checked before CLM updates or deletes a stack for cf-manifests or cf-deletions.yaml: a configuration
writer may make CLM change only the extra stacks CLM made for this cluster, never another cluster's stacks, CLM's own
hub or target stacks, this cluster's cluster or node-pool stacks, nor anyone else's. The stacks are deployed with the
ClusterStackRole like the cluster's, so the roles they make are held to CLM's path and permissions boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from clm.stacks.cfn import describe_stack
from clm.stacks.delete import start_delete
from clm.stacks.errors import StackFailed
from clm.stacks.events import first_failure
from clm.stacks.names import owned_tags
from clm.stacks.ownership import ensure_owned
from clm.stacks.spec import StackSpec, stack_spec

if TYPE_CHECKING:
    from clm.model import Cluster
    from clm.render.renderer import RenderedCluster

EXTRA_STACK_TAG = "clm:cf-manifest"
DELETE_FAILED = "DELETE_FAILED"
DELETE_WAIT_SECONDS = 10


def extra_stack_tags(cluster_name: str) -> dict[str, str]:
    """The tags that make a stack one of the cluster's extra stacks (`cluster_name`: Cluster.name, as CLM tags them
    with Name()), written at create and checked before a change."""
    return {**owned_tags(cluster_name), EXTRA_STACK_TAG: "true"}


def ensure_extra(stack: dict[str, Any], cluster_id: str, cluster_name: str) -> None:
    """Raise StackNotOwned unless `stack` (as DescribeStacks returns it) is an extra stack CLM made for the cluster."""
    ensure_owned(stack, cluster_id, extra_stack_tags(cluster_name))


def extra_stack_spec(rendered: RenderedCluster, name: str) -> StackSpec:
    """The extra stack `name` of a rendering (KeyError when the rendering has none of that name)."""
    from clm.render.cf_manifests import stack_name

    stack = next((stack for stack in rendered.extra_stacks if stack_name(stack.template) == name), None)
    if stack is None:
        raise KeyError(f"cluster {rendered.cluster.id}: the rendering has no cf-manifests stack {name!r}")
    tags = extra_stack_tags(rendered.cluster.name)
    return stack_spec(stack, rendered.cluster.id, name, tags, owner_tags=tags)


@dataclass(frozen=True)
class DeletionProgress:
    """Where cf-deletions.yaml's deletions of one phase are: `deleting` the stack waited for, `retried` the stacks
    whose failed deletion was started again once (a second failure stops the run)."""

    deleting: str = ""
    retried: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        """Every stack of the phase is gone."""
        return not self.deleting

    def to_dict(self) -> dict[str, Any]:
        """The apply workflow's phase result: `done`, `wait_seconds` before the next call."""
        wait = 0 if self.done else DELETE_WAIT_SECONDS
        return {"done": self.done, "wait_seconds": wait, "deleting": self.deleting, "retried": list(self.retried)}


def delete_in_order(
    cfn: Any, cluster: Cluster, names: Sequence[str], role_arn: str | None, retried: Sequence[str] = ()
) -> DeletionProgress:
    """One step of deleting `names` one after the other, as CLM's CFDeletions does (each waited for): the first stack
    still there is deleted (StackNotOwned, changing nothing, unless it is an extra stack of the cluster) or waited
    for; a stack gone or never made counts as deleted. A failed deletion is started again once, then raises
    StackFailed naming the stack and its resource."""
    cluster_id, ensure = cluster.id, partial(ensure_extra, cluster_name=cluster.name)
    for name in names:
        stack = describe_stack(cfn, name)
        if stack is None:
            continue
        if stack["StackStatus"] == DELETE_FAILED:
            ensure(stack, cluster_id)
            if name in retried:
                reason = stack.get("StackStatusReason", "")
                raise StackFailed(cluster_id, name, DELETE_FAILED, first_failure(cfn, stack), reason)
            retried = (*retried, name)
        if start_delete(cfn, name, cluster_id, role_arn, ensure=ensure).action != "absent":
            return DeletionProgress(name, tuple(retried))
    return DeletionProgress("", tuple(retried))
