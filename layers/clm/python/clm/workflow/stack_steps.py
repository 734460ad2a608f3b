"""The steps of the `stacks` function: start and check the cluster's CloudFormation stacks.

Every step is one bounded call; the state machine waits between `check`s and follows each result's
`next_step`. Templates are read from the stored rendering, never carried in the payload.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clm.aws import client
from clm.registry.dynamodb import DynamoRegistry
from clm.render.renderer import RenderedCluster
from clm.stacks.delete import start_delete
from clm.stacks.deploy import check, start
from clm.stacks.removed import removed_node_pools
from clm.stacks.spec import StackSpec, cluster_stack_spec, node_pool_stack_spec
from clm.workflow.render_step import load_rendering
from clm.workflow.settings import Settings


def start_cluster_stack(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering}` -> create or update the cluster stack (StartResult)."""
    return _start(event, cluster_stack_spec)


def start_node_pool_stack(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, node_pool}` -> create or update that node pool's stack (StartResult)."""
    return _start(event, lambda rendered: node_pool_stack_spec(rendered, event["node_pool"]))


def _start(event: dict[str, Any], make_spec: Callable[[RenderedCluster], StackSpec]) -> dict[str, Any]:
    settings = Settings.from_env()
    spec = make_spec(load_rendering(client("s3"), settings.artefact_bucket, event["rendering"]))
    return start(client("cloudformation"), client("s3"), spec, template_bucket=settings.artefact_bucket).to_dict()


def check_stack(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, stack_name}` -> the stack's state; a failed stack raises StackFailed naming the resource."""
    state = check(client("cloudformation"), event["stack_name"])
    state.raise_if_failed(event["cluster_id"])
    return state.to_dict()


def list_removed_node_pools(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id}` -> the node-pool stacks of pools no longer in the registry."""
    settings = Settings.from_env()
    cluster = DynamoRegistry(client("dynamodb"), settings.registry_table).get(event["cluster_id"])
    return {"removed": [pool.to_dict() for pool in removed_node_pools(client("cloudformation"), cluster)]}


def delete_stack(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, stack_name}` -> start deleting the stack (termination protection off first)."""
    return start_delete(client("cloudformation"), event["stack_name"], event["cluster_id"]).to_dict()


STEPS = {
    "start_cluster_stack": start_cluster_stack,
    "start_node_pool_stack": start_node_pool_stack,
    "check_stack": check_stack,
    "list_removed_node_pools": list_removed_node_pools,
    "delete_stack": delete_stack,
}
