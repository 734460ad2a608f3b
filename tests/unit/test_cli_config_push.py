"""`clm config push` on in-process moto: the prefix ends holding exactly the local cluster/ tree (new and changed
files uploaded, the others deleted or, with --no-delete, kept), then the marker naming every file with its ETag
(clm.config.push, clm.config.pushed), which reconcile reads as a whole upload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clm.config.pushed import MARKER, pushed_whole
from clm.config.s3 import S3Source
from tests.unit.test_cli_helpers import clm  # noqa: F401  (the `clm` fixture)

BUCKET = "config-bucket"
URI = f"s3://{BUCKET}/config/"


@pytest.fixture
def s3(aws):
    client = aws.client("s3")
    client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    return client


def tree(root: Path, files: dict[str, str]) -> Path:
    """A configuration repository at `root` holding `files` (path -> text)."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def held(s3, prefix: str = "config/") -> dict[str, bytes]:
    """Every object under `prefix` but the marker, by path relative to it."""
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])]
    return {
        key[len(prefix) :]: s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        for key in keys
        if not key.endswith(MARKER)
    }


def test_push_uploads_the_tree_then_only_what_changed_and_deletes_what_it_no_longer_has(tmp_path, s3, clm):  # noqa: F811
    run = clm[0]
    root = tree(tmp_path, {"cluster/stack.yaml": "a: 1\n", "cluster/node-pools/x/stack.yaml": "b: 2\n", "README": "-"})
    first = json.loads(run("-o", "json", "config", "push", str(root), URI).output)
    assert sorted(row["path"] for row in first) == ["cluster/node-pools/x/stack.yaml", "cluster/stack.yaml"]
    assert held(s3) == {"cluster/stack.yaml": b"a: 1\n", "cluster/node-pools/x/stack.yaml": b"b: 2\n"}

    (root / "cluster/node-pools/x/stack.yaml").unlink()
    tree(root, {"cluster/stack.yaml": "a: 2\n", "cluster/new.yaml": "c: 3\n"})
    second = json.loads(run("-o", "json", "config", "push", str(root), URI).output)
    assert sorted((row["path"], row["action"]) for row in second) == [
        ("cluster/new.yaml", "uploaded"),
        ("cluster/node-pools/x/stack.yaml", "deleted"),
        ("cluster/stack.yaml", "uploaded"),
    ]
    assert held(s3) == {"cluster/stack.yaml": b"a: 2\n", "cluster/new.yaml": b"c: 3\n"}
    source = S3Source(s3, BUCKET, "config/")
    assert pushed_whole(source, source.objects())
    assert "unchanged" in run("config", "push", str(root), URI).output  # nothing to upload: only the marker again


def test_a_dry_run_changes_nothing_and_no_delete_keeps_the_others_under_the_marker(tmp_path, s3, clm):  # noqa: F811
    run = clm[0]
    s3.put_object(Bucket=BUCKET, Key="config/beta/cluster/other.yaml", Body=b"x: 1\n")  # another channel's
    s3.put_object(Bucket=BUCKET, Key="config/cluster/others.yaml", Body=b"o: 1\n")
    root = tree(tmp_path, {"cluster/stack.yaml": "a: 1\n"})
    dry = json.loads(run("-o", "json", "config", "push", str(root), URI, "--dry-run").output)
    assert sorted((row["path"], row["action"]) for row in dry) == [
        ("cluster/others.yaml", "would delete"),
        ("cluster/stack.yaml", "would upload"),
    ]
    assert held(s3) == {"beta/cluster/other.yaml": b"x: 1\n", "cluster/others.yaml": b"o: 1\n"}

    run("config", "push", str(root), URI, "--no-delete")
    source = S3Source(s3, BUCKET, "config/")
    assert set(held(s3)) == {"beta/cluster/other.yaml", "cluster/others.yaml", "cluster/stack.yaml"}
    assert pushed_whole(source, source.objects())  # names others.yaml too; the other channel is not its business
    run("config", "push", str(root), URI, "--channel", "beta")
    assert set(held(s3, "config/beta/")) == {"cluster/stack.yaml"}


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [
        ({"stack.yaml": "a: 1\n"}, [], "no cluster/ folder: not a configuration repository"),
        ({MARKER: "{}"}, [], "that path is CLM's push marker"),
        ({"cluster/a.yaml": "a: 1\n"}, ["bucket/config"], "expected s3://bucket/prefix"),
        ({"cluster/a.yaml": "a: 1\n"}, [URI, "--channel", "../x"], "is not a folder name"),
    ],
)
def test_push_refuses_what_is_not_a_configuration_and_uploads_nothing(tmp_path, s3, clm, files, args, message):  # noqa: F811
    run = clm[0]
    result = run("config", "push", str(tree(tmp_path, files)), *(args or [URI]), ok=False)
    assert result.exit_code == 1 and message in str(result.exception)
    assert held(s3, "") == {}
