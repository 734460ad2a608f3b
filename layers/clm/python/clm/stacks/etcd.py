"""CLM's etcd stack as a StackSpec: its name, tags and stack policy (provisioner/clusterpy.go createOrUpdateEtcdStack).

CLM names it `etcd-cluster-etcd` (one per account and region), or the config item `etcd_stack_name`, and tags it
`application=kubernetes`, `component=etcd-cluster` over the template's `Metadata.Tags`, never with the cluster's
tag: its Decommission, which deletes the stacks tagged with the cluster, leaves it. Here it also carries
`clm:managed-by=clm` (the tag the stacks function's IAM needs to create or change a stack) and
`clm:etcd-cluster=<cluster id>`, checked before every change, so that a second cluster of the account and region
fails naming the stack rather than taking over the first's etcd.

CLM passes its policy as StackPolicyDuringUpdateBody of every update: updates may do anything but replace or delete
an auto scaling group, S3 bucket or IAM role. Here the same policy is the stack's own (StackPolicyBody at create,
SetStackPolicy when it differs), so that it holds for every update, CLM's or anyone's.

`etcd_stack_name` must start with `etcd-cluster-` here (CLM takes any name): the stacks function may read and set the
policy of those stacks only (infra.etcd_permissions), so that the item cannot point CLM's etcd grants at another stack.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from clm.stacks.names import MANAGED_BY, MANAGED_BY_TAG
from clm.stacks.spec import StackSpec, explicit_parameters, template_tags

if TYPE_CHECKING:
    from clm.render.renderer import RenderedCluster

ETCD_STACK_NAME = "etcd-cluster-etcd"
ETCD_STACK_NAME_ITEM = "etcd_stack_name"
ETCD_STACK_PREFIX = "etcd-cluster-"  # infra.etcd_permissions grants on these names only
_NAME = re.compile(r"etcd-cluster-[A-Za-z0-9-]{1,115}")  # a CloudFormation stack name (at most 128 characters)
ETCD_OWNER_TAG = "clm:etcd-cluster"
ETCD_TAGS = {"application": "kubernetes", "component": "etcd-cluster"}
PROTECTED_TYPES = ["AWS::AutoScaling::AutoScalingGroup", "AWS::S3::Bucket", "AWS::IAM::Role"]
STACK_POLICY = json.dumps(
    {
        "Statement": [
            {"Effect": "Allow", "Action": ["Update:*"], "Principal": "*", "Resource": ["*"]},
            {
                "Effect": "Deny",
                "Action": ["Update:Replace", "Update:Delete"],
                "Principal": "*",
                "Condition": {"StringEquals": {"ResourceType": PROTECTED_TYPES}},
            },
        ]
    },
    separators=(",", ":"),
)


def etcd_owner_tags(cluster_id: str) -> dict[str, str]:
    """The tags that make the etcd stack this cluster's, checked before CLM changes it."""
    return {MANAGED_BY_TAG: MANAGED_BY, ETCD_OWNER_TAG: cluster_id}


def etcd_stack_name(config_items: Mapping[str, str]) -> str:
    """The etcd stack's name: the config item `etcd_stack_name`, else CLM's `etcd-cluster-etcd`; ValueError for a
    name that is not `etcd-cluster-<letters, digits, dashes>`."""
    name = config_items.get(ETCD_STACK_NAME_ITEM, ETCD_STACK_NAME)
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"config item {ETCD_STACK_NAME_ITEM}: {name[:140]!r} is not a stack name starting with {ETCD_STACK_PREFIX} "
            "(letters, digits and dashes, at most 128 characters)"
        )
    return name


def etcd_stack_spec(rendered: RenderedCluster) -> StackSpec:
    """The etcd stack of a rendering that has one (clm.render.etcd)."""
    stack, cluster_id = rendered.etcd_stack, rendered.cluster.id
    if stack is None:
        raise ValueError(f"cluster {cluster_id}: the rendering has no etcd stack")
    owner, name = etcd_owner_tags(cluster_id), etcd_stack_name(rendered.cluster.config_items)
    return StackSpec(
        cluster_id=cluster_id,
        name=name,
        body=stack.body,
        template=stack.template,
        tags={**template_tags(stack.template), **ETCD_TAGS, **owner},
        parameters=explicit_parameters(stack.template, {}, cluster_id, name),
        file=stack.file,
        owner_tags=owner,
        policy=STACK_POLICY,
    )
