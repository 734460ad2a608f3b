"""The steps of the `run` function: begin and end a cluster run, and render its configuration."""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from clm.aws import client
from clm.config.channels import ConfigSources
from clm.registry.dynamodb import DynamoRegistry
from clm.workflow import parking, run
from clm.workflow.reconcile import INTERRUPTED
from clm.workflow.settings import Settings


def _registry(settings: Settings) -> DynamoRegistry:
    return DynamoRegistry(client("dynamodb"), settings.registry_table)


def execution_running(execution_arn: str) -> bool:
    """Whether a Step Functions execution still runs (an unknown one does not)."""
    sfn = client("stepfunctions")
    try:
        return sfn.describe_execution(executionArn=execution_arn)["status"] == "RUNNING"
    except (sfn.exceptions.ExecutionDoesNotExist, sfn.exceptions.InvalidArn):
        return False


def begin(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, execution, input}` -> the run plan: provision, decommission or skip, and why.

    A run started by a change (not one continuing an interrupted update, as the schedule's are) that finds the
    cluster's lock held wakes the holder's parked drains.
    """
    settings = Settings.from_env()
    config_version = ConfigSources(settings.config_source, client).version  # the cluster's channel picks it
    registry, cluster_id = _registry(settings), event["cluster_id"]
    reason = (event.get("input") or {}).get("reason")
    wake = None if reason == INTERRUPTED else partial(_wake, registry, cluster_id, event["execution"])
    plan = run.begin(registry, config_version, cluster_id, event["execution"], execution_running, wake)
    return plan.to_dict()


def _wake(registry: DynamoRegistry, cluster_id: str, execution: str) -> list[str]:
    return parking.wake(registry, client("stepfunctions"), cluster_id, execution)


def park(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, execution, node, token, park: {seconds, since}}` -> the drain parked (its task token kept
    on the registry item until a run wakes it or the task times out), or woken at once."""
    return parking.park(
        _registry(Settings.from_env()),
        client("stepfunctions"),
        event["cluster_id"],
        event["node"],
        event["token"],
        event["execution"],
        event["park"],
    )


NODE_FILES_BUCKET_ENV = "CLM_NODE_FILES_BUCKET"  # where node pools' bootstrap archives go (nodes read it)
MANAGE_ETCD_ENV = "CLM_MANAGE_ETCD_STACK"  # "true": CLM's etcd stack is provisioned (CDK context clm:manageEtcdStack)


def render(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id}` -> the key of the stored rendering and a summary (version, node pools, components); node-pool
    stacks see the cluster stack's current outputs (placeholders before it exists)."""
    from clm.workflow.render_step import render_to_s3  # YAML and the renderer (Jinja2): this step's alone

    settings = Settings.from_env()
    cluster = _registry(settings).get(event["cluster_id"])
    tree = ConfigSources(settings.config_source, client).for_cluster(cluster).fetch()
    inputs = _render_inputs(files_store=_files_store(False), etcd_store=_etcd_store(False))
    return render_to_s3(client("s3"), settings.artefact_bucket, tree, cluster, inputs, _cluster_outputs(cluster))


def node_pools(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering}` -> `{rendering}`: after the cluster stack, the key of the run's rendering whose node
    pools' stacks were rendered with its outputs and whose bootstrap archives are uploaded (idempotent)."""
    from clm.render.renderer import Renderer
    from clm.workflow.render_step import render_node_pools

    settings = Settings.from_env()
    cluster = _registry(settings).get(event["cluster_id"])
    outputs = _cluster_outputs(cluster) or {}

    def rendered(files_store: Any, values: dict[str, Any]) -> Any:
        tree = ConfigSources(settings.config_source, client).for_cluster(cluster).fetch()
        inputs = _render_inputs(files_store=files_store, etcd_store=_etcd_store(False))
        return Renderer(tree, inputs).render(cluster, values)

    key = render_node_pools(
        client("s3"), settings.artefact_bucket, event["rendering"], outputs, rendered, _files_store(True)
    )
    return {"rendering": key}


def etcd_files(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering}` -> `{}`: before the etcd stack, its files' archive uploaded (idempotent: the key is the
    content's hash, an archive already there is not uploaded again)."""
    from clm.render.node_files import OUTPUTS_VALUE, PendingOutputs
    from clm.render.renderer import Renderer
    from clm.workflow.render_step import upload_etcd_files

    settings = Settings.from_env()
    cluster = _registry(settings).get(event["cluster_id"])

    def rendered(etcd_store: Any) -> Any:
        tree = ConfigSources(settings.config_source, client).for_cluster(cluster).fetch()
        renderer = Renderer(tree, _render_inputs(etcd_store=etcd_store))
        return renderer.render(cluster, {OUTPUTS_VALUE: PendingOutputs()})  # the etcd stack reads no outputs

    upload_etcd_files(client("s3"), settings.artefact_bucket, event["rendering"], rendered, _etcd_store(True))
    return {}


def _render_inputs(**stores: Any) -> Any:
    """What templates may ask AWS at render (clm.render.inputs): decrypted config items (only with the keys the
    deployment names), EC2 (amiID, instance types, the network) and ACM/KMS, each asked only if a template needs
    it; `stores`: where node files go (files_store, etcd_store)."""
    import dataclasses

    from clm.render.inputs import RenderInputs
    from clm.render.secrets import keys_from_env

    return dataclasses.replace(RenderInputs.from_aws(client, keys_from_env(os.environ)), **stores)


def _cluster_outputs(cluster: Any) -> dict[str, str] | None:
    """The cluster stack's outputs (OutputKey -> OutputValue), None when it does not exist."""
    from clm.stacks.cfn import describe_stack
    from clm.stacks.names import cluster_stack_name

    stack = describe_stack(client("cloudformation"), cluster_stack_name(cluster))
    return None if stack is None else {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs") or []}


def _files_store(upload: bool) -> Any:
    """Node pools' archives: uploaded to the deployment's node-files bucket, or only their paths computed (then,
    without the setting, CLM's bucket of the cluster's account and region)."""
    from clm.render.node_files import PlannedFiles, UploadedFiles

    bucket = os.environ.get(NODE_FILES_BUCKET_ENV)
    if not bucket:
        return None
    return UploadedFiles(bucket, client("s3"), lambda: client("kms")) if upload else PlannedFiles(bucket)


def _etcd_store(upload: bool) -> Any:
    """The etcd files' archive (clm.render.etcd) when the deployment manages CLM's etcd stack (CLM_MANAGE_ETCD_STACK
    is "true"): uploaded to the node-files bucket, or only its path computed; None otherwise."""
    if os.environ.get(MANAGE_ETCD_ENV) != "true":
        return None
    return _files_store(upload)


def succeed(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, execution, plan, version}` -> record success (or decommissioned) and release the lock."""
    plan = run.RunPlan(**event["plan"])
    run.succeed(_registry(Settings.from_env()), plan, event["execution"], event.get("version", ""))
    return {"cluster_id": plan.cluster_id, "action": plan.action, "version": event.get("version", "")}


def fail(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, execution, error: {Error, Cause, Step?}}` -> the problem recorded on the cluster."""
    error = event.get("error") or {}
    problem = run.fail(
        _registry(Settings.from_env()),
        event["cluster_id"],
        event["execution"],
        error.get("Error", "States.Runtime"),
        error.get("Cause", ""),
        error.get("Step", ""),
    )
    return {"cluster_id": event["cluster_id"], "problem": problem.title}


STEPS = {
    "begin": begin,
    "render": render,
    "node_pools": node_pools,
    "etcd_files": etcd_files,
    "park": park,
    "succeed": succeed,
    "fail": fail,
}
