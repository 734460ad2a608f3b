"""The node-files bucket: node pools' bootstrap archives (clm.render.node_files), which the nodes read.

Named as CLM names it, `cluster-lifecycle-manager-<account>-<region>`, so that Zalando's cluster stacks, which let
their node roles read that bucket, work unchanged. Only archives go here (their secrets KMS-encrypted with the
cluster stacks' keys): never renderings, which stay in the artefact bucket that nodes cannot read.
"""

from __future__ import annotations

from aws_cdk import Stack
from constructs import Construct

from infra.buckets import content_addressed_bucket


def bucket_name(stack: Stack) -> str:
    """CLM's name of the node-files bucket of the stack's account and region."""
    return f"cluster-lifecycle-manager-{stack.account}-{stack.region}"


class NodeFilesBucket(Construct):
    """Private, S3-encrypted (nodes read it with their own roles), TLS-only; archives are content-addressed and
    never overwritten, old versions expire."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.bucket = content_addressed_bucket(self, "Bucket", bucket_name(Stack.of(self)), "CLM's run function")
