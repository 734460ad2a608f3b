"""CLM's etcd stack as a StackSpec: its name, tags and stack policy (provisioner/clusterpy.go createOrUpdateEtcdStack).

CLM names it `etcd-cluster-etcd` (one per account and region) and tags it `application=kubernetes`,
`component=etcd-cluster` over the template's `Metadata.Tags`, never with the cluster's tag: its Decommission, which
deletes the stacks tagged with the cluster, leaves it. Here it also carries `clm:managed-by=clm` (the tag the stacks
function's IAM needs to create or change a stack) and `clm:etcd-cluster=<cluster id>`, checked before every change,
so that a second cluster of the account and region fails naming the stack rather than taking over the first's etcd.

CLM passes its policy as StackPolicyDuringUpdateBody of every update: updates may do anything but replace or delete
an auto scaling group, S3 bucket or IAM role. Here the same policy is the stack's own (StackPolicyBody at create,
SetStackPolicy when it differs), so that it holds for every update, CLM's or anyone's.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from clm.stacks.names import MANAGED_BY, MANAGED_BY_TAG
from clm.stacks.spec import StackSpec, explicit_parameters, template_tags

if TYPE_CHECKING:
    from clm.render.renderer import RenderedCluster

ETCD_STACK_NAME = "etcd-cluster-etcd"
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


def etcd_stack_spec(rendered: RenderedCluster) -> StackSpec:
    """The etcd stack of a rendering that has one (clm.render.etcd)."""
    stack, cluster_id = rendered.etcd_stack, rendered.cluster.id
    if stack is None:
        raise ValueError(f"cluster {cluster_id}: the rendering has no etcd stack")
    owner = etcd_owner_tags(cluster_id)
    return StackSpec(
        cluster_id=cluster_id,
        name=ETCD_STACK_NAME,
        body=stack.body,
        template=stack.template,
        tags={**template_tags(stack.template), **ETCD_TAGS, **owner},
        parameters=explicit_parameters(stack.template, {}, cluster_id, ETCD_STACK_NAME),
        file=stack.file,
        owner_tags=owner,
        policy=STACK_POLICY,
    )
