"""The mark `clm config push` leaves on an S3 source: every file it pushed, with its ETag, so that reconcile reads a
push at once and whole instead of waiting for the upload to be quiet (docs/deploy.md, "Upload the configuration
repository")."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from clm.config.s3 import Listed, S3Source
from clm.errors import ConfigSourceError

log = logging.getLogger(__name__)

MARKER = "cluster/.clm-push.json"
MAX_MARKER_BYTES = 4 * 1024 * 1024  # ~40,000 files; a larger marker is not read (the upload settles by quiet)


def marker_body(etags: Mapping[str, str]) -> bytes:
    """The marker of a push of `etags` (path -> ETag, paths relative to the source's prefix)."""
    return json.dumps({"files": dict(sorted(etags.items()))}, indent=1).encode()


def pushed_whole(source: S3Source, objects: Mapping[str, Listed]) -> bool:
    """Whether `objects` (the source as listed) are exactly what its marker says was pushed: every file it names
    with that ETag, and no other. A marker that cannot be read or is malformed is logged and counts as none."""
    marker = objects.get(MARKER)
    if marker is None or marker.size > MAX_MARKER_BYTES:
        return False
    try:
        files = json.loads(source.read(MARKER, MAX_MARKER_BYTES))["files"]  # bounded: it may have grown since
    except (ConfigSourceError, ValueError, KeyError, TypeError) as exc:
        log.warning("%s%s: not a push marker, the upload settles by quiet: %s", source.describe(), MARKER, exc)
        return False
    return files == {path: listed.etag for path, listed in objects.items() if path != MARKER}
