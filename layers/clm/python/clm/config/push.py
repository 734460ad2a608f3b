"""`clm config push`: make an S3 source hold exactly a local configuration's cluster/ tree, then mark the push
(clm.config.pushed) so that reconcile reads it at once and whole."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from clm.config.parallel import read_all
from clm.config.pushed import MARKER, marker_body
from clm.config.s3 import ROOT, S3Source
from clm.errors import ConfigSourceError

DELETE_BATCH = 1000  # DeleteObjects' limit of keys per call


@dataclass(frozen=True)
class PushPlan:
    """What a push changes: paths (relative to the source's prefix) to upload and to delete, and the ETags of the
    files it leaves as they are."""

    upload: list[str]
    delete: list[str]
    kept: dict[str, str] = field(default_factory=dict)


def local_tree(root: Path) -> dict[str, bytes]:
    """The files of the configuration repository `root` that CLM reads: those under `root`/cluster/, by path
    relative to `root` (ConfigSourceError without a cluster/ folder, or with a file where a marker goes)."""
    folder = root / ROOT
    if not folder.is_dir():
        raise ConfigSourceError(f"{root}: no {ROOT} folder: not a configuration repository")
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    if MARKER in files:
        raise ConfigSourceError(f"{root / MARKER}: that path is CLM's push marker; rename the file")
    return files


def plan_push(source: S3Source, files: dict[str, bytes], *, delete: bool = True) -> PushPlan:
    """What pushing `files` to `source` changes: the files whose content S3 does not hold (by ETag: an object
    encrypted with KMS has another, so it is uploaded again), and the objects `files` does not have: deleted, or
    with `delete` False kept (and named by the marker)."""
    remote = {path: listed.etag for path, listed in source.objects().items() if path != MARKER}
    upload = [path for path, body in files.items() if remote.get(path) != _etag(body)]
    others = sorted(set(remote) - set(files))
    kept = [path for path in files if path not in upload] + ([] if delete else others)
    return PushPlan(upload=upload, delete=others if delete else [], kept={path: remote[path] for path in kept})


def push(source: S3Source, files: dict[str, bytes], plan: PushPlan) -> dict[str, str]:
    """Carry out `plan` (uploads, then deletions), then write the marker naming every file of `files` with its
    ETag; the ETags, by path."""
    s3, bucket = source.client, source.bucket

    def upload(path: str) -> str:
        return str(s3.put_object(Bucket=bucket, Key=source.prefix + path, Body=files[path])["ETag"])

    etags = {**plan.kept, **read_all(plan.upload, upload)}
    for start in range(0, len(plan.delete), DELETE_BATCH):
        keys = [{"Key": source.prefix + path} for path in plan.delete[start : start + DELETE_BATCH]]
        failed = s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True}).get("Errors") or []
        if failed:
            first = failed[0]
            raise ConfigSourceError(f"s3://{bucket}/{first.get('Key')}: not deleted: {first.get('Message')}")
    s3.put_object(Bucket=bucket, Key=source.prefix + MARKER, Body=marker_body(etags), ContentType="application/json")
    return etags


def _etag(body: bytes) -> str:
    """The ETag S3 gives an object of `body` put in one part, unencrypted or SSE-S3."""
    return f'"{hashlib.md5(body, usedforsecurity=False).hexdigest()}"'
