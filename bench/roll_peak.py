"""The group's side of a roll benchmark: the most instances the cluster's auto scaling groups held at once while
a roll ran (a surge's cost in instances), polled as the node simulator polls them."""

from __future__ import annotations

import threading
from typing import Any

from clm_sandbox.nodesim.aws import cluster_groups

POLL_SECONDS = 0.5  # the node simulator's poll interval: an instance it sees, this sees


class GroupPeak:
    """Polls the groups tagged for `cluster_id` from `start` to `stop`; `peak`: the most instances seen at once."""

    def __init__(self, autoscaling: Any, cluster_id: str, poll_seconds: float = POLL_SECONDS):
        self.autoscaling, self.cluster_id, self.poll_seconds = autoscaling, cluster_id, poll_seconds
        self.peak = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="roll-bench-group-peak", daemon=True)

    def start(self) -> None:
        """Take the first count, then poll in the background."""
        self._count()
        self._thread.start()

    def stop(self) -> None:
        """Stop polling, after one last count."""
        self._stopping.set()
        self._thread.join()
        self._count()

    def _poll(self) -> None:
        while not self._stopping.wait(self.poll_seconds):
            try:
                self._count()
            except Exception:  # a slow or refused poll: the next one counts
                continue

    def _count(self) -> None:
        groups = cluster_groups(self.autoscaling, self.cluster_id)
        self.peak = max(self.peak, sum(len(group["Instances"]) for group in groups))
