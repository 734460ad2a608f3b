"""CDK assertions on the synthesized CLM stack."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from infra.stack import ClmStack


@pytest.fixture(scope="module")
def template() -> Template:
    app = cdk.App(context={"clm:registryTableName": "clm-registry"})
    return Template.from_stack(ClmStack(app, "Clm"))


def test_registry_table_has_stream_pitr_and_encryption(template):
    template.has_resource("AWS::DynamoDB::Table", {
        "DeletionPolicy": "Retain",
        "Properties": {
            "TableName": "clm-registry",
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {"SSEEnabled": True},
        },
    })


def test_config_bucket_is_versioned_private_and_tls_only(template):
    template.has_resource_properties("AWS::S3::Bucket", {
        "VersioningConfiguration": {"Status": "Enabled"},
        "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                           "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
        "NotificationConfiguration": {"EventBridgeConfiguration": {"EventBridgeEnabled": True}},
    })
    template.has_resource_properties("AWS::S3::BucketPolicy", {
        "PolicyDocument": {"Statement": Match.array_with([Match.object_like({
            "Effect": "Deny", "Action": "s3:*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        })])},
    })
