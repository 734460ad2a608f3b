"""Where CLM reads the configuration repository: a prefix of the config bucket, or a CodeCommit branch."""

from __future__ import annotations

from aws_cdk import aws_codecommit as codecommit
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.context import ClmContext
from infra.nag import acknowledge_wildcards

CODECOMMIT_READ = ("codecommit:GetBranch", "codecommit:GetCommit", "codecommit:GetFolder", "codecommit:GetFile")


class ConfigSource(Construct):
    """`uri` is CLM_CONFIG_SOURCE (`s3://bucket/prefix` or `codecommit://repository@branch`).

    With context `clm:codeCommitRepository` the repository is created here, tracked on `clm:codeCommitBranch`.
    """

    def __init__(self, scope: Construct, construct_id: str, bucket: s3.IBucket, context: ClmContext) -> None:
        super().__init__(scope, construct_id)
        self.bucket = bucket
        self.prefix = context.config_prefix
        self.branch = context.codecommit_branch
        self.repository: codecommit.Repository | None = None
        if context.codecommit_repository:
            self.repository = codecommit.Repository(
                self,
                "Repository",
                repository_name=context.codecommit_repository,
                description="CLM configuration repository (cluster/ templates and manifests)",
            )
            self.uri = f"codecommit://{self.repository.repository_name}@{self.branch}"
        else:
            self.uri = f"s3://{bucket.bucket_name}/{self.prefix}"

    def grant_read(self, role: iam.Role) -> None:
        """Read the configuration: the branch's files at a commit, or the prefix's objects and their versions."""
        if self.repository is not None:
            self.repository.grant(role, *CODECOMMIT_READ)
            return
        # The config version comes from object versions when the bucket is versioned (s3:prefix only exists
        # on listings, so GetBucketVersioning has a statement of its own).
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["s3:GetBucketVersioning"], resources=[self.bucket.bucket_arn])
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket", "s3:ListBucketVersions"],
                resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{self.prefix}*"]}} if self.prefix else None,
            )
        )
        objects = self.bucket.arn_for_objects(f"{self.prefix}*")
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["s3:GetObject", "s3:GetObjectVersion"], resources=[objects])
        )
        acknowledge_wildcards(role, [objects], "the configuration is every object under the config prefix")

    def change_pattern(self) -> events.EventPattern:
        """EventBridge pattern of a config change: a push to the branch, or an object created under the prefix."""
        if self.repository is not None:
            return events.EventPattern(
                source=["aws.codecommit"],
                detail_type=["CodeCommit Repository State Change"],
                resources=[self.repository.repository_arn],
                detail={"referenceType": ["branch"], "referenceName": [self.branch]},
            )
        key = {"prefix": self.prefix} if self.prefix else {"exists": True}
        return events.EventPattern(
            source=["aws.s3"],
            detail_type=["Object Created"],
            detail={"bucket": {"name": [self.bucket.bucket_name]}, "object": {"key": [key]}},
        )
