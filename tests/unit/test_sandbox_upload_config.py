"""The sandbox's config upload (clm_sandbox.deploy.examples.upload_config), which the demo and the benchmarks use: a
push of examples/config, then of changed files only, each leaving what the earlier ones changed and marking the
whole prefix pushed (clm.config.pushed), so that reconcile reads each at once."""

from __future__ import annotations

from clm.config.pushed import pushed_whole
from clm.config.s3 import S3Source
from clm_sandbox.deploy.examples import EXAMPLES, upload_config

BUCKET = "config-bucket"
DEFAULTS = "cluster/config-defaults.yaml"
WORKLOAD = "cluster/manifests/example-app/02-workload.yaml"


def test_a_changed_upload_keeps_what_the_earlier_ones_changed_and_is_marked_whole(aws) -> None:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    source = S3Source(s3, BUCKET, "config/")
    files = sum(1 for path in (EXAMPLES / "config" / "cluster").rglob("*") if path.is_file())
    assert upload_config(s3, BUCKET, EXAMPLES / "config") == files
    assert upload_config(s3, BUCKET, EXAMPLES / "config", {WORKLOAD: "grace: 1\n"}) == 1
    assert upload_config(s3, BUCKET, EXAMPLES / "config", {DEFAULTS: "worker_ami: ami-1\n"}) == 1
    assert source.read(WORKLOAD, 100) == b"grace: 1\n" and source.read(DEFAULTS, 100) == b"worker_ami: ami-1\n"
    assert len(source.objects()) == files + 1  # and the marker
    assert pushed_whole(source, source.objects())
