"""When reconcile reads a configuration upload: at once when `clm config push` marked it whole, else once it has
been quiet for a few seconds, not after a fixed wait.

An upload of many files starts one reconcile per file. A push's marker (clm.config.pushed), written last, names
every file: while the source holds exactly those, the marker's reconcile reads it at once and the others end. Any
other upload: each reconcile waits until no object of the upload's source and channel changed for QUIET_SECONDS;
one whose own file is no longer the newest ends at once (the newer file's reconcile reads the whole upload). A
CodeCommit push is one commit: read at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from clm.config.changes import change_scope
from clm.config.pushed import MARKER, pushed_whole
from clm.config.s3 import S3Source
from clm.config.uri import one_source, parse_sources

QUIET_SECONDS = 5.0  # S3's LastModified has one-second precision; uploads of a tree write files back to back
MAX_SETTLE_SECONDS = 600.0  # an upload still going after this long is read as it is (the next one reconciles again)


def settle(
    uri: str, change: Mapping[str, Any] | None, client: Callable[[str], Any], now: float, waited: float
) -> dict[str, Any]:
    """`{wait_seconds, superseded}` for a reconcile started by `change` (`{bucket, key}` or `{repository, branch}`)
    `waited` seconds ago: wait_seconds 0 when a push marked the source whole or the upload has been quiet
    QUIET_SECONDS (or waited MAX_SETTLE_SECONDS), `superseded` when the marker's reconcile or a newer file's of the
    same source and channel reads it."""
    scope = change_scope(uri, change) if change else None
    if scope is None or "key" not in change:
        return {"wait_seconds": 0, "superseded": False}
    source = one_source(dict(parse_sources(uri))[scope.source], client, scope.channel)
    if not isinstance(source, S3Source):
        return {"wait_seconds": 0, "superseded": False}
    objects = source.objects()
    path = str(change["key"])[len(source.prefix) :]
    if pushed_whole(source, objects):
        return {"wait_seconds": 0, "superseded": path != MARKER}
    newest = max((listed.modified for listed in objects.values()), default=0.0)
    mine = objects[path].modified if path in objects else None
    if mine is not None and mine < newest:
        return {"wait_seconds": 0, "superseded": True}
    quiet_for = now - newest
    if quiet_for >= QUIET_SECONDS or waited >= MAX_SETTLE_SECONDS:
        return {"wait_seconds": 0, "superseded": False}
    return {"wait_seconds": max(1, math.ceil(QUIET_SECONDS - quiet_for)), "superseded": False}
