"""The CDK bootstrap faked in moto, and the assembly's file assets published to it as the CDK CLI publishes them:
directories zipped (deterministically, like the CLI), files as they are, under the keys the manifest names."""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from clm_sandbox.controlplane import cache_root
from clm_sandbox.deploy.synth import Assembly

QUALIFIER = "hnb659fds"  # the CDK's default bootstrap qualifier
VERSION_PARAMETER = f"/cdk-bootstrap/{QUALIFIER}/version"
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # zip entries carry no build time, so equal content gives an equal zip
_SKIPPED_DIRS = {"__pycache__"}


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
    """A zip of directory `source` (caches and compiled files left out), cached by the asset id (a content hash)."""
    target = cache_root() / "asset-zips" / f"{asset_id}.zip"
    if target.is_file():
        return target
    if not source.is_dir():
        raise FileNotFoundError(f"asset {asset_id}: {source} is not a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(dir=target.parent, prefix=".zip-")
    os.close(handle)
    try:
        with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            for path in _files(source):
                info = zipfile.ZipInfo(path.relative_to(source).as_posix(), _FIXED_TIME)
                info.external_attr = (path.stat().st_mode & 0o777 | 0o100000) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                with path.open("rb") as data, archive.open(info, "w") as entry:
                    shutil.copyfileobj(data, entry, 1 << 20)
        os.replace(staging, target)
    finally:
        Path(staging).unlink(missing_ok=True)
    return target


def _files(root: Path) -> list[Path]:
    found: list[Path] = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(name for name in subdirectories if name not in _SKIPPED_DIRS)
        found += [Path(directory) / name for name in sorted(names) if not name.endswith(".pyc")]
    return found


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
