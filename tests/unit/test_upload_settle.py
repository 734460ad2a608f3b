"""When reconcile reads a configuration upload (clm.workflow.upload_settle): once it has been quiet for a few seconds;
a reconcile whose file is no longer the newest ends; a push and a change outside the sources read at once."""

from __future__ import annotations

import boto3
import pytest

from clm.workflow.upload_settle import MAX_SETTLE_SECONDS, QUIET_SECONDS, settle

BUCKET = "config-bucket"
URI = f"s3://{BUCKET}/config/"


@pytest.fixture
def s3(aws: boto3.Session):
    client = aws.client("s3")
    client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    return client


def upload(s3, *keys: str) -> dict[str, float]:
    """Put each key; {key: its LastModified as listed}."""
    for key in keys:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x: 1\n")
    listed = s3.list_objects_v2(Bucket=BUCKET)["Contents"]
    return {item["Key"]: item["LastModified"].timestamp() for item in listed}


def decide(s3, key: str, now: float, waited: float = 0.0, uri: str = URI) -> dict:
    return settle(uri, {"bucket": BUCKET, "key": key}, lambda service: s3, now, waited)


def test_an_upload_is_read_once_quiet_for_a_few_seconds(s3):
    times = upload(s3, "config/cluster/stack.yaml", "config/cluster/config-defaults.yaml")
    newest = max(times.values())
    key = max(times, key=times.get)
    assert decide(s3, key, newest + 1) == {"wait_seconds": QUIET_SECONDS - 1, "superseded": False}
    assert decide(s3, key, newest + 4.5) == {"wait_seconds": 1, "superseded": False}
    assert decide(s3, key, newest + QUIET_SECONDS) == {"wait_seconds": 0, "superseded": False}
    assert decide(s3, key, newest + 1, waited=MAX_SETTLE_SECONDS) == {"wait_seconds": 0, "superseded": False}


def test_a_file_followed_by_a_newer_one_of_its_source_and_channel_leaves_the_reading_to_the_newer(s3):
    times = upload(s3, "config/cluster/a.yaml")
    while max(upload(s3, "config/cluster/b.yaml").values()) <= times["config/cluster/a.yaml"]:
        pass  # one-second precision: b must be listed as newer
    later = max(upload(s3, "config/beta/cluster/c.yaml").values())  # another channel: not a's upload
    assert decide(s3, "config/cluster/a.yaml", later + 60) == {"wait_seconds": 0, "superseded": True}
    assert decide(s3, "config/cluster/b.yaml", later + 60)["superseded"] is False
    assert decide(s3, "config/beta/cluster/c.yaml", later + 60)["superseded"] is False


@pytest.mark.parametrize(
    "change",
    [None, {"repository": "config", "branch": "main"}, {"bucket": "elsewhere", "key": "config/cluster/x.yaml"}],
)
def test_a_push_or_a_change_outside_the_sources_is_read_at_once(s3, change):
    upload(s3, "config/cluster/stack.yaml")
    assert settle(URI, change, lambda service: pytest.fail("nothing to list"), 0.0, 0.0) == {
        "wait_seconds": 0,
        "superseded": False,
    }
