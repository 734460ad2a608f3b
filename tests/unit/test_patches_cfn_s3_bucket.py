"""A CloudFormation bucket with versioning and EventBridge notifications: both applied, and an upload reaches a
rule on the default bus."""

from __future__ import annotations

import json

import boto3

from clm_sandbox.patches import cfn_s3_bucket

TEMPLATE = {
    "Resources": {
        "Config": {
            "Type": "AWS::S3::Bucket",
            "Properties": {
                "BucketName": "config-bucket",
                "VersioningConfiguration": {"Status": "Enabled"},
                "NotificationConfiguration": {"EventBridgeConfiguration": {"EventBridgeEnabled": True}},
            },
        }
    }
}


def test_bucket_from_a_template_is_versioned_and_notifies_eventbridge(sandbox_aws: boto3.Session) -> None:
    cfn_s3_bucket.install()
    cfn_s3_bucket.install()
    sandbox_aws.client("cloudformation").create_stack(StackName="bucket", TemplateBody=json.dumps(TEMPLATE))
    s3, sqs, events = sandbox_aws.client("s3"), sandbox_aws.client("sqs"), sandbox_aws.client("events")
    assert s3.get_bucket_versioning(Bucket="config-bucket")["Status"] == "Enabled"
    queue = sqs.create_queue(QueueName="seen")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="created", EventPattern=json.dumps({"source": ["aws.s3"], "detail-type": ["Object Created"]}))
    events.put_targets(Rule="created", Targets=[{"Id": "q", "Arn": queue_arn}])
    s3.put_object(Bucket="config-bucket", Key="config/cluster/stack.yaml", Body=b"x")
    messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    assert json.loads(messages[0]["Body"])["detail"]["object"]["key"] == "config/cluster/stack.yaml"
