"""The artefact bucket: CLM's renderings and the templates too large to pass inline to CloudFormation.

Renderings hold what templates put in manifests and stacks, decrypted config items included (as CLM applies
them): the bucket is encrypted with a KMS key of its own, usable only through S3 by principals of this account
whose IAM policies allow it (CLM's functions: infra.permissions.grant_artefact_key).
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.buckets import private_bucket
from infra.nag import acknowledge

RENDERINGS_PREFIX = "renderings/"  # clm.workflow.render_step.PREFIX
TEMPLATES_PREFIX = "clm/templates/"  # clm.stacks.template.KEY_PREFIX
RENDERINGS_EXPIRE_DAYS = 30
# Managing the key, not using it: kms:Encrypt/Decrypt/GenerateDataKey* and ReEncrypt* are not among them.
KEY_ADMIN_ACTIONS = [
    "kms:CancelKeyDeletion",
    "kms:Create*",
    "kms:Delete*",
    "kms:Describe*",
    "kms:Disable*",
    "kms:Enable*",
    "kms:Get*",
    "kms:List*",
    "kms:Put*",
    "kms:Revoke*",
    "kms:ScheduleKeyDeletion",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:Update*",
]
KEY_USE_ACTIONS = ["kms:Decrypt", "kms:GenerateDataKey"]


def artefact_key_policy(stack: Stack) -> iam.PolicyDocument:
    """The account administers the key (through IAM); it is used only through S3 in this region, by principals
    of this account that IAM allows (no key-policy grant to anyone by name, no other service, no other account)."""
    account = iam.AccountRootPrincipal()
    return iam.PolicyDocument(
        statements=[
            iam.PolicyStatement(sid="Administer", principals=[account], actions=KEY_ADMIN_ACTIONS, resources=["*"]),
            iam.PolicyStatement(
                sid="UseThroughS3",
                principals=[account],
                actions=KEY_USE_ACTIONS,
                resources=["*"],
                conditions={
                    "StringEquals": {
                        "kms:ViaService": f"s3.{stack.region}.amazonaws.com",
                        "kms:CallerAccount": stack.account,
                    }
                },
            ),
        ]
    )


class ArtefactBucket(Construct):
    """Private, KMS-encrypted, TLS-only bucket; renderings expire after 30 days (they are content-addressed and
    re-created by the next run), old object versions after the same time."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "Key",
            description="CLM artefact bucket (renderings, large templates)",
            enable_key_rotation=True,
            policy=artefact_key_policy(Stack.of(self)),
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.bucket = private_bucket(
            self,
            "Bucket",
            encryption_key=self.key,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-renderings",
                    prefix=RENDERINGS_PREFIX,
                    expiration=Duration.days(RENDERINGS_EXPIRE_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-old-versions",
                    noncurrent_version_expiration=Duration.days(RENDERINGS_EXPIRE_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                ),
            ],
        )
        acknowledge(self, "S1", "only CLM's functions write here; CloudTrail data events audit access if needed")
