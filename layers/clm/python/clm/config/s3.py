"""A configuration repository under an S3 prefix, read as a consistent snapshot.

What is read is `<prefix>cluster/` (the default channel) or `<prefix><channel>/cluster/` (a cluster's `channel`:
a prefix per channel, as a branch per channel in CLM's git source), so that channels never see each other's
objects. Tree paths are relative to `<prefix>[<channel>/]`.

Versioned buckets pin each object's latest version id at listing time and read exactly that
version. Unversioned buckets read each object with `IfMatch=<listed ETag>`; if an object changed
or vanished in between, the whole snapshot is listed and read again (a bounded number of times).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from clm.config.parallel import read_all
from clm.config.tree import ConfigTree, digest
from clm.errors import ConfigSourceError

ATTEMPTS = 3
ROOT = "cluster/"
_CHANNEL = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
_CHANGED = {"PreconditionFailed", "NoSuchKey", "NoSuchVersion"}


@dataclass(frozen=True)
class Listed:
    """An object as ListObjectsV2 lists it."""

    etag: str
    modified: float
    size: int


class S3Source:
    """Objects under `<prefix>[<channel>/]cluster/` in `bucket`; tree paths are relative to `<prefix>[<channel>/]`."""

    def __init__(self, client: Any, bucket: str, prefix: str = "", channel: str = ""):
        self.client = client
        self.bucket = bucket
        prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        if channel and not _folder_name(channel):
            raise ConfigSourceError(f"s3://{bucket}/{prefix}: channel {channel!r} is not a folder name (nor cluster)")
        self.prefix = prefix + channel + "/" if channel else prefix
        self.channel = channel

    def describe(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def version(self) -> str:
        """Hash of the listing (key and version id or ETag); reads no object."""
        with self._errors():
            _, listing = self._list()
        return digest(listing.items())

    def objects(self) -> dict[str, Listed]:
        """Each path's ETag and last modification (epoch seconds, S3's one-second precision); reads no object."""
        with self._errors():
            return {
                item["Key"][len(self.prefix) :]: Listed(item["ETag"], item["LastModified"].timestamp(), item["Size"])
                for page in self._pages("list_objects_v2")
                for item in page.get("Contents", [])
            }

    def read(self, path: str, limit: int) -> bytes:
        """The object at `path` as it is now, its first `limit` bytes at most (ConfigSourceError when it cannot be
        read)."""
        with self._errors():
            answer = self.client.get_object(Bucket=self.bucket, Key=self.prefix + path, Range=f"bytes=0-{limit - 1}")
            return answer["Body"].read()

    def fetch(self) -> ConfigTree:
        with self._errors():
            for _ in range(ATTEMPTS):
                versioned, listing = self._list()
                try:
                    files = self._read(listing, versioned)
                except ClientError as exc:
                    if exc.response["Error"]["Code"] in _CHANGED:
                        continue
                    raise
                return ConfigTree(version=digest(listing.items()), files=files, source=self.describe())
        raise ConfigSourceError(f"{self.describe()}: objects kept changing while being read ({ATTEMPTS} attempts)")

    def _list(self) -> tuple[bool, dict[str, str]]:
        """Whether the bucket is versioned, and each path's version id (versioned) or ETag. A channel without
        objects does not exist (ConfigSourceError), as a missing branch in CLM's git source (channel/git.go)."""
        versioned = self.client.get_bucket_versioning(Bucket=self.bucket).get("Status") == "Enabled"
        listing: dict[str, str] = {}
        if versioned:
            for page in self._pages("list_object_versions"):
                for item in page.get("Versions", []):
                    if item["IsLatest"]:
                        listing[item["Key"]] = item["VersionId"]
        else:
            for page in self._pages("list_objects_v2"):
                for item in page.get("Contents", []):
                    listing[item["Key"]] = item["ETag"]
        files = {key[len(self.prefix) :]: identity for key, identity in listing.items() if not key.endswith("/")}
        if self.channel and not files:
            raise ConfigSourceError(f"{self.describe()}{ROOT}: no objects: channel {self.channel!r} does not exist")
        return versioned, files

    def _pages(self, operation: str) -> Iterator[dict[str, Any]]:
        return self.client.get_paginator(operation).paginate(Bucket=self.bucket, Prefix=self.prefix + ROOT)

    def _read(self, listing: dict[str, str], versioned: bool) -> dict[str, bytes]:
        """Every listed object at its listed version (or ETag), a bounded number of requests at a time."""
        return read_all(listing, lambda path: self._get(path, listing[path], versioned))

    def _get(self, path: str, identity: str, versioned: bool) -> bytes:
        pin = {"VersionId": identity} if versioned else {"IfMatch": identity}
        return self.client.get_object(Bucket=self.bucket, Key=self.prefix + path, **pin)["Body"].read()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise ConfigSourceError(f"{self.describe()}: {error.get('Code')}: {error.get('Message')}") from None
        except BotoCoreError as exc:
            raise ConfigSourceError(f"{self.describe()}: {exc}") from None


def _folder_name(channel: str) -> bool:
    """Whether a channel names a prefix of its own: path segments, no "..", not under the default's cluster/."""
    parts = channel.split("/")
    return bool(_CHANNEL.fullmatch(channel)) and ".." not in parts and parts[0] + "/" != ROOT
