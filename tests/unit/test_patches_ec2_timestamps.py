"""EC2 on patched moto writes its timestamps to the millisecond (an instance's LaunchTime), so the node simulator
boots a node boot_delay after its launch rather than after it noticed the instance; S3 keeps whole seconds."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends

from clm_sandbox.patches import ec2_timestamps

LAUNCHED = datetime(2026, 11, 29, 0, 59, 32, 371_942)


def test_an_instances_launch_time_is_written_to_the_millisecond(aws: boto3.Session) -> None:
    ec2_timestamps.install()
    ec2 = aws.client("ec2")
    [instance] = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)["Instances"]
    ec2_backends[DEFAULT_ACCOUNT_ID][aws.region_name].get_instance(instance["InstanceId"]).launch_time = LAUNCHED
    [reservation] = ec2.describe_instances()["Reservations"]
    assert reservation["Instances"][0]["LaunchTime"] == LAUNCHED.replace(microsecond=371_000, tzinfo=UTC)


def test_s3_keeps_its_whole_seconds(aws: boto3.Session) -> None:
    ec2_timestamps.install()
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="clm-timestamps", CreateBucketConfiguration={"LocationConstraint": aws.region_name})
    s3.put_object(Bucket="clm-timestamps", Key="k", Body=b"x")
    [listed] = s3.list_objects_v2(Bucket="clm-timestamps")["Contents"]
    assert listed["LastModified"].microsecond == 0
