"""When reconcile reads a configuration upload (clm.workflow.upload_settle): once it has been quiet for a few seconds;
a reconcile whose file is no longer the newest ends; a push and a change outside the sources read at once; an upload
`clm config push` marked whole (clm.config.pushed) at once, by the marker's reconcile alone."""

from __future__ import annotations

import json
from dataclasses import replace

import boto3
import pytest

from clm.config import pushed as pushed_module
from clm.config.push import plan_push, push
from clm.config.pushed import MARKER
from clm.config.s3 import S3Source
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


def pushed(s3, files: dict[str, bytes], *, delete: bool = True) -> float:
    """Push `files` (paths under config/) as `clm config push` does; the marker's LastModified."""
    source = S3Source(s3, BUCKET, "config/")
    push(source, files, plan_push(source, files, delete=delete))
    return source.objects()[MARKER].modified


def test_a_marked_push_is_read_at_once_by_the_markers_reconcile_and_ends_the_others(s3):
    at = pushed(s3, {"cluster/stack.yaml": b"a: 1\n", "cluster/config-defaults.yaml": b"b: 2\n"})
    assert decide(s3, f"config/{MARKER}", at) == {"wait_seconds": 0, "superseded": False}
    assert decide(s3, "config/cluster/stack.yaml", at) == {"wait_seconds": 0, "superseded": True}


def test_a_file_changed_after_a_push_is_read_once_quiet(s3):
    at = pushed(s3, {"cluster/stack.yaml": b"a: 1\n"})
    newest = max(upload(s3, "config/cluster/stack.yaml").values())  # another content: the marker no longer holds
    assert decide(s3, "config/cluster/stack.yaml", newest + 1) == {
        "wait_seconds": QUIET_SECONDS - 1,
        "superseded": False,
    }
    assert decide(s3, f"config/{MARKER}", max(at, newest) + QUIET_SECONDS)["wait_seconds"] == 0


@pytest.mark.parametrize(
    "marker",
    [
        b"not json",
        b'{"files": ["cluster/stack.yaml"]}',
        b'{"files": {"cluster/stack.yaml": "\\"0\\""}}',  # another content than the object's
        b'{"files": {}}',  # a file it does not name
        b'{"files": {"cluster/stack.yaml": "E", "cluster/gone.yaml": "E"}}',
    ],
)
def test_a_marker_that_does_not_name_exactly_what_the_source_holds_counts_for_nothing(s3, marker):
    """A config writer's hand-made or stale marker cannot make reconcile read an upload before it is quiet."""
    etag = s3.put_object(Bucket=BUCKET, Key="config/cluster/stack.yaml", Body=b"a: 1\n")["ETag"]
    s3.put_object(Bucket=BUCKET, Key=f"config/{MARKER}", Body=marker.replace(b'"E"', json.dumps(etag).encode()))
    newest = max(upload(s3).values())
    assert decide(s3, f"config/{MARKER}", newest + 1) == {"wait_seconds": QUIET_SECONDS - 1, "superseded": False}


def test_a_marker_too_large_to_read_counts_for_nothing_and_is_never_read_whole(s3, monkeypatch):
    """A marker is read within MAX_MARKER_BYTES (a Range request), so that no marker can fill the reconcile
    function's memory, even one grown between the listing and the read."""
    at = pushed(s3, {f"cluster/{n:03}.yaml": b"a: 1\n" for n in range(20)})
    assert decide(s3, f"config/{MARKER}", at) == {"wait_seconds": 0, "superseded": False}
    size = S3Source(s3, BUCKET, "config/").objects()[MARKER].size
    monkeypatch.setattr(pushed_module, "MAX_MARKER_BYTES", size - 1)
    assert decide(s3, f"config/{MARKER}", at)["wait_seconds"] > 0
    ranges: list[str] = []
    s3.meta.events.register("provide-client-params.s3.GetObject", lambda params, **_: ranges.append(params["Range"]))
    listed = S3Source(s3, BUCKET, "config/").objects()
    assert not pushed_module.pushed_whole(
        S3Source(s3, BUCKET, "config/"), {**listed, MARKER: replace(listed[MARKER], size=1)}
    )
    assert ranges == [f"bytes=0-{size - 2}"]  # the listing's size is not trusted: what is read is bounded
