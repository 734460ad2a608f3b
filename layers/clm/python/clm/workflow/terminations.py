"""Terminating a replaced node's instance: by Replace's Terminate step, or by a batch's drain pass as each of its
nodes is drained (so that the successor boots while the batch's other nodes still drain)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, Self

from botocore.exceptions import ClientError

from clm.workflow.target_aws import TargetAws

log = logging.getLogger(__name__)
WORKERS = 4


def terminate_replacement(
    client: Callable[[str], Any], replacement: dict[str, Any], cluster_name: Callable[[], str]
) -> str:
    """Terminate the replacement's instance through its group (decrementing it when the plan says so), or through
    EC2 for a Karpenter pool's (after checking its tags: clm.stacks.karpenter_pool), with `client`'s clients (e.g.
    TargetAws.client); its new state, "already" when it is gone. Idempotent. `cluster_name`: the tags' cluster
    name, asked only for a Karpenter pool's."""
    if replacement.get("karpenter_pool"):
        from clm.stacks.karpenter_pool import terminate_pool_instance

        pool, instance = replacement["karpenter_pool"], replacement["instance_id"]
        return terminate_pool_instance(client("ec2"), cluster_name(), pool, instance)
    try:
        activity = client("autoscaling").terminate_instance_in_auto_scaling_group(
            InstanceId=replacement["instance_id"], ShouldDecrementDesiredCapacity=bool(replacement["decrement"])
        )["Activity"]
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ValidationError":  # not in a group any more: already terminated
            raise
        return "already"
    return str(activity.get("StatusCode", ""))


def terminated_now(where: TargetAws, replacement: dict[str, Any], cluster_name: str) -> dict[str, Any]:
    """Terminate a drained replacement's instance (a one-node drain's, as its pass ends): `{terminated,
    terminated_at}` (its new state, epoch seconds), or {} when that failed (logged: Replace's Terminate does it
    then, with its retries)."""
    try:
        state = terminate_replacement(where.client, replacement, lambda: cluster_name)
    except Exception:
        log.exception("terminating the instance of drained node %s failed; Replace terminates it", replacement["node"])
        return {}
    return {"terminated": state, "terminated_at": round(time.time(), 2)}


class Terminations:
    """The terminations a batch pass starts as its nodes are drained, in threads of their own (the pass goes on).

    A termination that fails is logged and left out of :meth:`states`: Replace's Terminate step does it then,
    with its retries. The clients are made in the calling thread, with its credentials (a thread started in a
    Lambda call sees the same environment on AWS, not in the sandbox's in-process calls)."""

    def __init__(self, where: TargetAws, replacements: list[dict[str, Any]], cluster_name: str) -> None:
        self._name = cluster_name
        self._by_node = {r["node"]: r for r in replacements if r.get("node")}
        services = {"ec2" if r.get("karpenter_pool") else "autoscaling" for r in self._by_node.values()}
        self._clients = {service: where.client(service) for service in services}
        self._started: dict[str, Future[tuple[str, float]]] = {}
        self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="terminate")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._pool.shutdown(wait=True)

    def start(self, node: str) -> None:
        """Terminate the instance of drained `node` (once; a node not of the batch is ignored)."""
        replacement = self._by_node.get(node)
        if replacement is None or node in self._started:
            return
        self._started[node] = self._pool.submit(self._terminate, replacement)

    def _terminate(self, replacement: dict[str, Any]) -> tuple[str, float]:
        return terminate_replacement(self._clients.__getitem__, replacement, lambda: self._name), round(time.time(), 2)

    def states(self) -> dict[str, tuple[str, float]]:
        """Node -> its instance's new state and when (epoch seconds), for every termination started that succeeded
        (waits for them)."""
        states = {}
        for node, future in self._started.items():
            try:
                states[node] = future.result()
            except Exception:
                log.exception("terminating the instance of drained node %s failed; Replace terminates it", node)
        return states
