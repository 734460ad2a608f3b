"""The target stack (`ClmTarget`): what the hub needs in each other account and region that holds clusters.

The target roles (infra.target_roles) with the cluster-side grants of the hub's functions (infra.cluster_permissions),
the ClusterStackRole and its boundary, CLM's node-files bucket and a bucket for templates over CloudFormation's
inline limit (CloudFormation reads a TemplateURL in the stack's region with the caller's rights). docs/fleet.md.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.artefacts import TEMPLATES_PREFIX
from infra.buckets import content_addressed_bucket
from infra.cluster_permissions import CLUSTER_FUNCTIONS, grant_cluster_side
from infra.cluster_stack_denials import ClmsOwn
from infra.cluster_stack_role import ClusterStackRole
from infra.context import ClmContext, Hub
from infra.functions import function_id
from infra.node_files import NodeFilesBucket
from infra.target_roles import CLOUDFORMATION, TargetRole, role_name

TARGET_STACK_NAME = "ClmTarget"
DESCRIPTION = "CLM target: the roles and buckets the CLM hub uses here"


def templates_bucket_name(stack: Stack) -> str:
    """The name of the target's templates bucket in the stack's account and region."""
    return f"clm-templates-{stack.account}-{stack.region}"


class ClmTargetStack(Stack):
    """One account and region's target resources for the hub of context `clm:hub` (`<account>:<region>`)."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any):
        super().__init__(scope, construct_id, **kwargs)
        hub, context = Hub.of(self), ClmContext.of(self)
        self.node_files = NodeFilesBucket(self, "NodeFiles")
        self.templates = content_addressed_bucket(
            self, "Templates", templates_bucket_name(self), "the hub's stacks function (its target role)"
        )
        self.cluster_stack_role = ClusterStackRole.of_context(
            self, "ClusterStackRole", context, role_name=role_name(CLOUDFORMATION, self.region)
        )
        self.roles = {
            folder: TargetRole(self, function_id(folder) + "Target", folder=folder, hub=hub)
            for folder in CLUSTER_FUNCTIONS
        }
        grant_cluster_side(
            self.roles, self.node_files.bucket, self.cluster_stack_role.role, etcd=context.manage_etcd_stack
        )
        self.roles["stacks"].allow(
            ["s3:PutObject", "s3:GetObject"],
            [self.templates.arn_for_objects(f"{TEMPLATES_PREFIX}*")],
            reason="templates over CloudFormation's inline limit, named by content hash",
        )
        self.cluster_stack_role.deny(ClmsOwn(buckets=(self.node_files.bucket, self.templates)))

        CfnOutput(self, "Hub", value=f"{hub.account}:{hub.region}")
        CfnOutput(self, "NodeFilesBucketName", value=self.node_files.bucket.bucket_name)
        CfnOutput(self, "TemplatesBucketName", value=self.templates.bucket_name)
        CfnOutput(self, "ClusterStackRoleArn", value=self.cluster_stack_role.role.role_arn)
        for folder, role in self.roles.items():
            CfnOutput(self, f"{function_id(folder)}TargetRoleArn", value=role.role.role_arn)
