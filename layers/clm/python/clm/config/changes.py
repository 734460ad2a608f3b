"""Which clusters a configuration change concerns: an S3 object created under a source's prefix belongs to the
default channel (`<prefix>cluster/...`) or to channel `<channel>` (`<prefix><channel>/cluster/...`); a push to a
CodeCommit branch belongs to the channel of that name (the source URI's branch is also the default channel).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clm.config.s3 import ROOT
from clm.config.uri import parse_sources


@dataclass(frozen=True)
class ChangeScope:
    """A change to one source on one channel ("" = the default channel)."""

    source: str
    channel: str
    default_branch: str = ""  # CodeCommit: the branch clusters without a channel read

    def concerns(self, channels: Mapping[str, str]) -> bool:
        """Whether a cluster reading `channels` ({source: channel}) reads what changed."""
        channel = channels.get(self.source)
        if channel is None:
            return False
        return channel == self.channel or (not channel and self.channel == self.default_branch)


def change_scope(uri: str, change: Mapping[str, Any]) -> ChangeScope | None:
    """The source and channel an event's change (`{bucket, key}` or `{repository, branch}`) is on, or None when it
    names none of the sources of `uri` (then every cluster is concerned)."""
    best: tuple[int, ChangeScope] | None = None
    for name, part in parse_sources(uri):
        scope = _in_s3(name, part, change) if part.startswith("s3://") else _in_codecommit(name, part, change)
        if scope is not None and (best is None or scope[0] > best[0]):
            best = scope
    return best[1] if best else None


def _in_s3(name: str, uri: str, change: Mapping[str, Any]) -> tuple[int, ChangeScope] | None:
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
    key = str(change.get("key") or "")
    if change.get("bucket") != bucket or not key.startswith(prefix):
        return None
    rest = key[len(prefix) :]
    if rest.startswith(ROOT):
        return len(prefix), ChangeScope(name, "")
    channel, sep, _ = rest.partition("/" + ROOT)
    return (len(prefix), ChangeScope(name, channel)) if sep else None


def _in_codecommit(name: str, uri: str, change: Mapping[str, Any]) -> tuple[int, ChangeScope] | None:
    if not uri.startswith("codecommit://"):
        return None
    repository, _, branch = uri[len("codecommit://") :].partition("@")
    if change.get("repository") != repository or not change.get("branch"):
        return None
    return 0, ChangeScope(name, str(change["branch"]), branch)
