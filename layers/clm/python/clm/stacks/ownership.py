"""Whether an existing stack is one CLM may change: checked before every change CLM makes to a stack."""

from __future__ import annotations

from typing import Any

from clm.stacks.errors import StackNotOwned
from clm.stacks.names import ingress_tags, owned_tags


def ensure_owned(stack: dict[str, Any], cluster_id: str, wanted: dict[str, str] | None = None) -> None:
    """Raise StackNotOwned unless `stack` (as DescribeStacks returns it) carries the tags every stack of the cluster
    is created with (`kubernetes.io/cluster/<id>=owned`, `clm:managed-by=clm`; `wanted` for a stack tagged
    otherwise: a node-pool stack, tagged with the cluster's name (clm.stacks.spec), the etcd stack,
    clm.stacks.etcd); the error names each one missing."""
    _ensure_tags(stack, cluster_id, wanted or owned_tags(cluster_id), "CLM's stack of the cluster")


def ensure_ingress(stack: dict[str, Any], cluster_id: str, cluster_name: str) -> None:
    """Raise StackNotOwned unless `stack` is a stack kube-ingress-aws-controller made for the cluster
    (`kubernetes.io/cluster/<name>=owned`, `kubernetes:application=kube-ingress-aws-controller`; <name>: the
    cluster's name, Cluster.name): the only stacks CLM did not create that a decommission deletes."""
    _ensure_tags(stack, cluster_id, ingress_tags(cluster_name), "an ingress controller's stack of the cluster")


def has_tags(stack: dict[str, Any], wanted: dict[str, str]) -> bool:
    """Whether `stack` carries every tag of `wanted` with its value."""
    return not _missing(stack, wanted)


def _ensure_tags(stack: dict[str, Any], cluster_id: str, wanted: dict[str, str], what: str) -> None:
    missing = _missing(stack, wanted)
    if missing:
        raise StackNotOwned(cluster_id, stack["StackName"], missing, what)


def _missing(stack: dict[str, Any], wanted: dict[str, str]) -> list[str]:
    tags = {tag["Key"]: tag["Value"] for tag in stack.get("Tags", [])}
    return [f"{key}={value}" for key, value in wanted.items() if tags.get(key) != value]
