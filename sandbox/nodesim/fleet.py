"""Node simulators for every cluster that has auto scaling groups in moto, started as clusters appear.

One control plane serves the whole sandbox, so every simulated cluster's Nodes register there; each
cluster's workflows only look at the Nodes of their own instances.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import boto3

from clm_sandbox.nodesim.simulator import NodeSimulator

log = logging.getLogger(__name__)
CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"


def tagged_clusters(autoscaling: Any) -> set[str]:
    """The cluster ids that auto scaling groups are tagged `kubernetes.io/cluster/<id>=owned` for."""
    found = set()
    for page in autoscaling.get_paginator("describe_auto_scaling_groups").paginate():
        for group in page["AutoScalingGroups"]:
            for tag in group.get("Tags", []):
                if tag["Key"].startswith(CLUSTER_TAG_PREFIX) and tag.get("Value") == "owned":
                    found.add(tag["Key"].removeprefix(CLUSTER_TAG_PREFIX))
    return found


class SimulatorFleet:
    """Starts a NodeSimulator per discovered cluster; `stop()` stops them all."""

    def __init__(
        self,
        api_client: Any,
        session: boto3.Session,
        *,
        endpoint_url: str | None = None,
        interval: float = 2.0,
        **simulator_options: float,
    ) -> None:
        self._api, self._session, self._endpoint = api_client, session, endpoint_url
        self._options, self._interval = simulator_options, interval
        self.simulators: dict[str, NodeSimulator] = {}
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._discover, name="sandbox-fleet", daemon=True)

    def start(self) -> None:
        """Discover clusters now and every `interval` seconds."""
        self._thread.start()

    def stop(self) -> None:
        """Stop discovering and stop every simulator (their Nodes are removed)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        for simulator in self.simulators.values():
            simulator.stop()

    def _discover(self) -> None:
        autoscaling = self._session.client("autoscaling", endpoint_url=self._endpoint)
        while not self._stopping.is_set():
            try:
                for cluster_id in sorted(tagged_clusters(autoscaling) - set(self.simulators)):
                    simulator = NodeSimulator(
                        self._api, self._session, cluster_id, endpoint_url=self._endpoint, **self._options
                    )
                    simulator.start()
                    self.simulators[cluster_id] = simulator
                    log.info("simulating the nodes of %s", cluster_id)
            except Exception:  # moto restarting or busy: try again next round
                log.exception("cluster discovery failed")
            self._stopping.wait(self._interval)
