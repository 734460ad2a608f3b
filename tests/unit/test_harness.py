"""The test harness's shortcuts change no test's world: each `mock_aws` starts on new, empty backends with moto's
default AMIs though its reset empties backends instead of rebuilding them (tests/moto_reset.py), and sessions that
share one botocore loader (tests/botocore_models.py) still make working clients, the loader's paths kept short."""

from __future__ import annotations

import boto3
from botocore.loaders import Loader
from moto import mock_aws
from moto.core.base_backend import BackendDict

REGION = "eu-central-1"
WHERE = {"CreateBucketConfiguration": {"LocationConstraint": REGION}}


def test_a_new_mock_starts_on_new_backends_with_the_default_images() -> None:
    with mock_aws():
        ec2, s3 = boto3.client("ec2", region_name=REGION), boto3.client("s3", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
        s3.create_bucket(Bucket="clm-reset", **WHERE)
        s3.put_object(Bucket="clm-reset", Key="k", Body=b"v")
        images = len(ec2.describe_images(Owners=["amazon"])["Images"])
    assert not BackendDict._instances
    with mock_aws():
        ec2, s3 = boto3.client("ec2", region_name=REGION), boto3.client("s3", region_name=REGION)
        assert vpc not in {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]}
        assert s3.list_buckets()["Buckets"] == []
        s3.create_bucket(Bucket="clm-reset", **WHERE)  # S3's own clean-up ran: the name is free again
        assert len(ec2.describe_images(Owners=["amazon"])["Images"]) == images > 100


def test_sessions_share_one_loader_and_their_clients_work(aws: boto3.Session) -> None:
    sessions = [boto3.Session(region_name=REGION) for _ in range(20)]
    loaders = {id(s._session.get_component("data_loader")) for s in [aws, *sessions]}
    assert len(loaders) == 1
    loader: Loader = aws._session.get_component("data_loader")
    assert len(loader.search_paths) <= len(set(loader.search_paths)) + 1  # boto3's folder, appended once more
    sessions[-1].client("s3").create_bucket(Bucket="clm-loader", **WHERE)
    assert [b["Name"] for b in aws.client("s3").list_buckets()["Buckets"]] == ["clm-loader"]
