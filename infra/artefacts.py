"""The artefact bucket: CLM's renderings and the templates too large to pass inline to CloudFormation."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.buckets import private_bucket
from infra.nag import acknowledge

RENDERINGS_PREFIX = "renderings/"  # clm.workflow.render_step.PREFIX
TEMPLATES_PREFIX = "clm/templates/"  # clm.stacks.template.KEY_PREFIX
RENDERINGS_EXPIRE_DAYS = 30


class ArtefactBucket(Construct):
    """Private, encrypted, TLS-only bucket; renderings expire after 30 days (they are content-addressed and
    re-created by the next run), old object versions after the same time."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.bucket = private_bucket(
            self,
            "Bucket",
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
