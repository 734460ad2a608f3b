"""The CDK bootstrap faked in moto, and the assembly's file assets published to it as the CDK CLI publishes them:
directories zipped (deterministically, like the CLI), files as they are, under the keys the manifest names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from clm_sandbox.controlplane import cache_root
from clm_sandbox.deploy.synth import Assembly

QUALIFIER = "hnb659fds"  # the CDK's default bootstrap qualifier
VERSION_PARAMETER = f"/cdk-bootstrap/{QUALIFIER}/version"


def bootstrap(ssm: Any, s3: Any, account: str, region: str, version: int) -> str:
    """What `cdk bootstrap` leaves that a deployment reads: the version parameter and the assets bucket (its name)."""
    ssm.put_parameter(Name=VERSION_PARAMETER, Value=str(version), Type="String", Overwrite=True)
    bucket = f"cdk-{QUALIFIER}-assets-{account}-{region}"
    try:
        s3.create_bucket(Bucket=bucket, **_location(region))
    except ClientError as exc:
        if exc.response["Error"]["Code"] not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
            raise
    return bucket


def publish_assets(s3: Any, assembly: Assembly, account: str, region: str) -> dict[str, str]:
    """Upload every file asset that is not there yet; returns `{asset id: s3 key}`."""
    published: dict[str, str] = {}
    for asset_id, asset in assembly.file_assets().items():
        source = assembly.directory / asset["source"]["path"]
        body = _zipped(source, asset_id) if asset["source"].get("packaging") == "zip" else source
        for destination in asset["destinations"].values():
            bucket = _substituted(destination["bucketName"], account, region)
            key = destination["objectKey"]
            if not _exists(s3, bucket, key):
                s3.upload_file(str(body), bucket, key)
            published[asset_id] = key
    return published


def _zipped(source: Path, asset_id: str) -> Path:
    """A zip of directory `source`, cached by the asset id (a content hash)."""
    from infra.zips import zip_directory  # the CDK app's package: importable where the app is synthesized

    return zip_directory(source, cache_root() / "asset-zips" / f"{asset_id}.zip")


def _exists(s3: Any, bucket: str, key: str) -> bool:
    try:
        s3.head_object(Bucket=bucket, Key=key)
    except ClientError:
        return False
    return True


def _substituted(text: str, account: str, region: str) -> str:
    for name, value in (("AWS::AccountId", account), ("AWS::Region", region), ("AWS::Partition", "aws")):
        text = text.replace(f"${{{name}}}", value)
    return text


def _location(region: str) -> dict[str, Any]:
    return {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
