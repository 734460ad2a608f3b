"""Where CLM reads the configuration repository: a prefix of the config bucket, or a CodeCommit branch."""

from __future__ import annotations

from aws_cdk import aws_codecommit as codecommit
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.context import ClmContext
from infra.nag import acknowledge_wildcards

CODECOMMIT_READ = (
    "codecommit:GetBranch",
    "codecommit:GetCommit",
    "codecommit:GetFolder",
    "codecommit:GetFile",
    "codecommit:GetBlob",  # symbolic links: the blob holds the target's path
)


class ConfigSource(Construct):
    """`uri` is CLM_CONFIG_SOURCE (`s3://bucket/prefix` or `codecommit://repository@branch`).

    With context `clm:codeCommitRepository` the repository is created here, tracked on `clm:codeCommitBranch`.
    """

    def __init__(self, scope: Construct, construct_id: str, bucket: s3.IBucket, context: ClmContext) -> None:
        super().__init__(scope, construct_id)
        self.bucket = bucket
        self.prefix = context.config_prefix
        self.extra_prefixes = [extra.split("=", 1) for extra in context.extra_config_prefixes]
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
        if self.extra_prefixes:  # combined as CLM's channel/combined.go: the main source first
            extras = ",".join(f"{name}=s3://{bucket.bucket_name}/{prefix}" for name, prefix in self.extra_prefixes)
            self.uri = f"main={self.uri},{extras}"

    @property
    def s3_prefixes(self) -> list[str]:
        """The prefixes of the config bucket that hold a source."""
        main = [] if self.repository is not None else [self.prefix]
        return main + [prefix for _, prefix in self.extra_prefixes]

    def grant_read(self, role: iam.Role) -> None:
        """Read the configuration: the branches' files at a commit, and the prefixes' objects and their versions."""
        if self.repository is not None:
            self.repository.grant(role, *CODECOMMIT_READ)
        if self.s3_prefixes:
            self._grant_s3_read(role, self.s3_prefixes)

    def _grant_s3_read(self, role: iam.Role, prefixes: list[str]) -> None:
        # The config version comes from object versions when the bucket is versioned (s3:prefix only exists
        # on listings, so GetBucketVersioning has a statement of its own).
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["s3:GetBucketVersioning"], resources=[self.bucket.bucket_arn])
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket", "s3:ListBucketVersions"],
                resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{p}*" for p in prefixes]}} if all(prefixes) else None,
            )
        )
        objects = [self.bucket.arn_for_objects(f"{prefix}*") for prefix in prefixes]
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["s3:GetObject", "s3:GetObjectVersion"], resources=objects)
        )
        acknowledge_wildcards(role, objects, "the configuration is every object under the config prefixes")

    def change_rules(self) -> list[tuple[str, events.EventPattern, dict[str, str]]]:
        """(rule id, EventBridge pattern, the change passed to reconcile) per kind of config change: a push to any
        branch (a branch per channel), an object created under a source's prefix (a prefix per channel)."""
        rules = []
        if self.repository is not None:
            pattern = events.EventPattern(
                source=["aws.codecommit"],
                detail_type=["CodeCommit Repository State Change"],
                resources=[self.repository.repository_arn],
                detail={"referenceType": ["branch"], "event": ["referenceCreated", "referenceUpdated"]},
            )
            change = {"repository": "$.detail.repositoryName", "branch": "$.detail.referenceName"}
            rules.append(("ConfigChanged", pattern, change))
        if self.s3_prefixes:
            keys = [{"prefix": prefix} if prefix else {"exists": True} for prefix in self.s3_prefixes]
            pattern = events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={"bucket": {"name": [self.bucket.bucket_name]}, "object": {"key": keys}},
            )
            rule_id = "ConfigChanged" if self.repository is None else "ConfigObjectCreated"
            rules.append((rule_id, pattern, {"bucket": "$.detail.bucket.name", "key": "$.detail.object.key"}))
        return rules
