"""Which configuration a cluster gets: its `channel` picks the version of every source, and the config item
`override_channel` (`<source>=<channel>,...`) another channel for a named source, as Zalando CLM
(api/cluster.go ChannelOverrides, channel/combined.go Version, controller/cluster_list.go updateClusters).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clm.config.tree import ConfigSource
from clm.config.uri import one_source, parse_sources, source_from_uri
from clm.errors import ConfigSourceError
from clm.model import Cluster

OVERRIDE_CHANNEL = "override_channel"


def channel_overrides(cluster: Cluster) -> dict[str, str]:
    """The cluster's `override_channel` as {source: channel}; each comma-separated part needs a "=" (CLM)."""
    text = cluster.config_items.get(OVERRIDE_CHANNEL)
    if text is None:
        return {}
    overrides = {}
    for part in text.split(","):
        name, sep, channel = part.partition("=")
        if not sep:
            raise ConfigSourceError(
                f"cluster {cluster.id}: config item {OVERRIDE_CHANNEL}: invalid override definition {part!r} "
                "(expected <source>=<channel>, comma-separated)"
            )
        overrides[name] = channel
    return overrides


class ConfigSources:
    """CLM_CONFIG_SOURCE resolved per cluster. Versions are read once per source and channel in this object's
    life (make one per invocation: a reconcile over many clusters lists each channel once)."""

    def __init__(self, uri: str, client: Callable[[str], Any]):
        self.uri = uri
        self.client = client
        self.named = parse_sources(uri)
        self._versions: dict[tuple[str, str], str] = {}

    def channels(self, cluster: Cluster) -> dict[str, str]:
        """{source name: channel} for the cluster ("" = the default channel)."""
        overrides = channel_overrides(cluster) if len(self.named) > 1 else {}
        channel = cluster.channel or ""
        return {name: overrides.get(name, channel) for name, _ in self.named}

    def for_cluster(self, cluster: Cluster) -> ConfigSource:
        """The cluster's configuration source (combined when several are configured) on its channels."""
        overrides = channel_overrides(cluster) if len(self.named) > 1 else {}
        return source_from_uri(self.uri, self.client, cluster.channel or "", overrides)

    def version(self, cluster: Cluster) -> str:
        """The config version the cluster's channels pick (`name=version;...` for combined sources)."""
        channels = self.channels(cluster)
        try:
            versions = [(name, self._version(name, part, channels[name])) for name, part in self.named]
        except ConfigSourceError as exc:
            raise ConfigSourceError(f"cluster {cluster.id} (channel {cluster.channel or 'default'!r}): {exc}") from None
        if len(versions) == 1:
            return versions[0][1]
        return ";".join(f"{name}={version}" for name, version in versions)

    def _version(self, name: str, uri: str, channel: str) -> str:
        if (name, channel) not in self._versions:
            self._versions[name, channel] = one_source(uri, self.client, channel).version()
        return self._versions[name, channel]
