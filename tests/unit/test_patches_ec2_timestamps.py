"""EC2 on patched moto writes an instance's LaunchTime to the millisecond, so the node simulator boots a node
boot_delay after its launch rather than after it noticed the instance."""

from __future__ import annotations

import time

import boto3

from clm_sandbox.patches import ec2_timestamps


def test_an_instances_launch_time_is_written_to_the_millisecond(aws: boto3.Session) -> None:
    ec2_timestamps.install()
    ec2 = aws.client("ec2")
    before = time.time()
    ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)
    after = time.time()
    [reservation] = ec2.describe_instances()["Reservations"]
    launched = reservation["Instances"][0]["LaunchTime"].timestamp()
    assert before - 0.001 <= launched <= after, (before, launched, after)  # zeroed to the second, it is up to 1 s early
