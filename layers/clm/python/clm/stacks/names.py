"""Stack names and tags, as Zalando CLM names and tags them (so migrated clusters keep their stacks).

CLM (zalando-incubator/cluster-lifecycle-manager): the cluster stack is named after the local id and tagged
`kubernetes.io/cluster/<id>=owned` and `cluster-lifecycle-controller.zalando.org/main-stack=true`
(provisioner/aws.go applyClusterStack: the id, for a zalando-eks cluster too); a node-pool stack is
`nodepool-<pool>-<id with ":" as "-">`, tagged `kubernetes.io/cluster/<name>=owned`, `kubernetes.io/role/node-pool=
true`, `kubernetes.io/node-pool=<pool>`, `NodePool=<pool>` and `kubernetes.io/node-pool/profile=<profile>`
(provisioner/node_pools.go provisionNodePool), where <name> is CLM's cluster name (api/cluster.go Name(): the
alias of a zalando-eks cluster, else the id; clm.model.Cluster.name).
Both also get the template's `Metadata.Tags`, CLM's tags winning (aws.go applyStack): see clm.stacks.spec.
"""

from __future__ import annotations

import re

from clm.model import Cluster, NodePool
from clm.stacks.errors import InvalidStackSpec

MAX_STACK_NAME = 128
NODE_POOL_STACK_PREFIX = "nodepool-"
NODE_POOL_TAG = "kubernetes.io/node-pool"
NODE_POOL_TAG_LEGACY = "NodePool"
NODE_POOL_ROLE_TAG = "kubernetes.io/role/node-pool"
NODE_POOL_PROFILE_TAG = "kubernetes.io/node-pool/profile"
MAIN_STACK_TAG = "cluster-lifecycle-controller.zalando.org/main-stack"
# On every stack CLM creates: one fixed key that IAM conditions can name (a condition key cannot hold the cluster
# id's wildcard), so the stacks function may change only stacks carrying it (infra/cluster_permissions.py).
MANAGED_BY_TAG = "clm:managed-by"
MANAGED_BY = "clm"
OWNED = "owned"
# kube-ingress-aws-controller tags the stacks of its load balancers so (aws/cf.go createStack, with its default
# --controller-id); a decommission deletes them (CLM deletes every stack tagged with the cluster: clm.stacks.ingress).
INGRESS_APP_TAG = "kubernetes:application"
INGRESS_CONTROLLER = "kube-ingress-aws-controller"
_FORBIDDEN = re.compile(r"[^A-Za-z0-9-]")  # stack names are [A-Za-z][A-Za-z0-9-]*


def cluster_tag_key(name: str) -> str:
    """`kubernetes.io/cluster/<name>`, the tag that marks a cluster's resources (<name>: the cluster's id, or
    CLM's cluster name, Cluster.name, where CLM uses Name())."""
    return f"kubernetes.io/cluster/{name}"


def cluster_stack_name(cluster: Cluster) -> str:
    """The cluster stack is named after the cluster's local id."""
    return cluster.local_id


def node_pool_stack_name(cluster_id: str, pool_name: str) -> str:
    """`nodepool-<pool>-<cluster id>`, with every character CloudFormation forbids replaced by `-`."""
    name = f"{NODE_POOL_STACK_PREFIX}{pool_name}{_node_pool_stack_suffix(cluster_id)}"
    if len(name) > MAX_STACK_NAME:
        raise InvalidStackSpec(
            f"node pool {pool_name!r}: stack name is {len(name)} characters, CloudFormation allows {MAX_STACK_NAME}",
            cluster_id,
            name,
        )
    return name


def may_be_node_pool_stack(cluster_id: str, stack_name: str) -> bool:
    """Whether `stack_name` has the form of a node-pool stack name of the cluster.

    Only a first cut: cluster `b` pool `x-a` and cluster `a-b` pool `x` share `nodepool-x-a-b`, so the stack's
    cluster tag decides.
    """
    suffix = _node_pool_stack_suffix(cluster_id)
    return (
        stack_name.startswith(NODE_POOL_STACK_PREFIX)
        and stack_name.endswith(suffix)
        and len(stack_name) > len(NODE_POOL_STACK_PREFIX) + len(suffix)
    )


def _node_pool_stack_suffix(cluster_id: str) -> str:
    return f"-{_FORBIDDEN.sub('-', cluster_id)}"


def owned_tags(cluster_id: str) -> dict[str, str]:
    """The tags every stack of the cluster carries and is checked for: the cluster's ownership tag and CLM's."""
    return {cluster_tag_key(cluster_id): OWNED, MANAGED_BY_TAG: MANAGED_BY}


def ingress_tags(cluster_id: str) -> dict[str, str]:
    """The tags of a stack kube-ingress-aws-controller made for the cluster's load balancers."""
    return {cluster_tag_key(cluster_id): OWNED, INGRESS_APP_TAG: INGRESS_CONTROLLER}


def cluster_stack_tags(cluster_id: str) -> dict[str, str]:
    """Tags of the cluster stack: the owned tags and CLM's main-stack tag."""
    return {**owned_tags(cluster_id), MAIN_STACK_TAG: "true"}


def node_pool_stack_tags(cluster_name: str, pool: NodePool) -> dict[str, str]:
    """Tags of a node-pool stack: the owned tags of the cluster's name (Cluster.name), CLM's node-pool role, the
    pool's name (twice) and profile."""
    return {
        **owned_tags(cluster_name),
        NODE_POOL_ROLE_TAG: "true",
        NODE_POOL_TAG: pool.name,
        NODE_POOL_TAG_LEGACY: pool.name,
        NODE_POOL_PROFILE_TAG: pool.profile,
    }
