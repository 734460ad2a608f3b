"""The Kubernetes calls of the simulated kubelets: register Nodes, report status, finish pods.

Patches with a dict body are strategic merge patches (the client's default for dicts). Every call
has a request timeout; 409 conflicts of read-modify-write updates are retried;
"already gone" answers are not errors.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client
from kubernetes.client.rest import ApiException

from clm_sandbox.nodesim.model import (
    NOT_READY_TAINT,
    Instance,
    heartbeat_patch,
    node_manifest,
    node_status,
    without_taint,
)

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = 10.0
CONFLICT_ATTEMPTS = 5
T = TypeVar("T")


def retry_on_conflict(action: Callable[[], T], what: str, attempts: int = CONFLICT_ATTEMPTS) -> T:
    """Run ``action`` (a read-modify-write) again while it fails with 409 Conflict."""
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except ApiException as exc:
            if exc.status != 409 or attempt == attempts:
                raise
            log.debug("conflict on %s (attempt %d), retrying", what, attempt)
    raise AssertionError("unreachable")


class KubeletApi:
    """What kubelets (and podgc) write to the API server, for the simulator's nodes and pods."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api_client)

    # ------------------------------------------------------------------ nodes
    def register_node(self, instance: Instance, wall: float) -> None:
        """Create the instance's Node (not Ready yet); a stale Node of that name is replaced."""
        manifest = node_manifest(instance, wall)
        try:
            self.core.create_node(manifest, _request_timeout=REQUEST_TIMEOUT)
            return
        except ApiException as exc:
            if exc.status != 409:
                raise
        existing = self.core.read_node(instance.node_name, _request_timeout=REQUEST_TIMEOUT)
        if existing.spec.provider_id == instance.provider_id:
            log.info("node %s of %s already registered: adopting it", instance.node_name, instance.instance_id)
            self._patch_node(instance.node_name, {"metadata": {"labels": manifest["metadata"]["labels"]}})
            return
        log.warning(
            "node %s belongs to %s, not to %s: replacing it",
            instance.node_name,
            existing.spec.provider_id,
            instance.provider_id,
        )
        self.delete_node(instance.node_name)
        self.core.create_node(manifest, _request_timeout=REQUEST_TIMEOUT)

    def set_node_ready(self, instance: Instance, wall: float) -> None:
        """Post a Ready status (status subresource) and remove the not-ready taint admission added."""
        self.core.patch_node_status(
            instance.node_name,
            {"status": node_status(instance, wall, ready=True)},
            _request_timeout=REQUEST_TIMEOUT,
        )
        retry_on_conflict(lambda: self._remove_taint(instance.node_name, NOT_READY_TAINT), f"node {instance.node_name}")

    def heartbeat(self, name: str, wall: float) -> bool:
        """Renew the node's condition heartbeats; False when the Node is gone."""
        try:
            self.core.patch_node_status(name, heartbeat_patch(wall), _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def delete_node(self, name: str) -> bool:
        """Delete the Node; False when it was already gone."""
        return self._gone_ok(lambda: self.core.delete_node(name, _request_timeout=REQUEST_TIMEOUT))

    def _remove_taint(self, name: str, key: str) -> None:
        response = self.core.read_node(name, _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
        node = json.loads(response.data)
        taints = without_taint(node["spec"].get("taints"), key)
        if taints is None:
            return
        # The resourceVersion makes this an optimistic update: a concurrent change gives 409.
        self._patch_node(
            name, {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]}, "spec": {"taints": taints}}
        )

    def _patch_node(self, name: str, patch: dict[str, Any]) -> None:
        self.core.patch_node(name, patch, _request_timeout=REQUEST_TIMEOUT)

    # ------------------------------------------------------------------- pods
    def pods_on_node(self, name: str) -> list[dict[str, Any]]:
        """Every pod bound to the node, as API dicts."""
        response = self.core.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={name}", _preload_content=False, _request_timeout=REQUEST_TIMEOUT
        )
        return json.loads(response.data)["items"]

    def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> bool:
        """Apply a status patch; False when the pod is gone or was replaced by one with another uid."""
        return self._gone_ok(
            lambda: self.core.patch_namespaced_pod_status(name, namespace, patch, _request_timeout=REQUEST_TIMEOUT),
            also=(409, 422),
        )

    def delete_pod_now(self, namespace: str, name: str, uid: str) -> bool:
        """Delete the pod with grace 0 if it still has ``uid``; False when it was gone already."""
        options = client.V1DeleteOptions(grace_period_seconds=0, preconditions=client.V1Preconditions(uid=uid))
        return self._gone_ok(
            lambda: self.core.delete_namespaced_pod(name, namespace, body=options, _request_timeout=REQUEST_TIMEOUT),
            also=(409,),
        )

    @staticmethod
    def _gone_ok(call: Callable[[], object], also: tuple[int, ...] = ()) -> bool:
        try:
            call()
        except ApiException as exc:
            if exc.status in (404, *also):
                return False
            raise
        return True
