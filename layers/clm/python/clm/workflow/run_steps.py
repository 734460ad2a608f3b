"""The steps of the `run` function: begin and end a cluster run, render its configuration, and check the hub's
targets (`clm targets`)."""

from __future__ import annotations

import dataclasses
import logging
import os
from functools import partial
from typing import Any

from clm.aws import client
from clm.config.channels import ConfigSources
from clm.model import Cluster
from clm.registry.dynamodb import DynamoRegistry
from clm.registry.rollouts import RolloutStore
from clm.workflow import cluster_events, health_gate, parking, rollout_gate, run, target_aws
from clm.workflow.apply_only import is_apply_only
from clm.workflow.bus import EVENT_BUS_ENV
from clm.workflow.reconcile import INTERRUPTED
from clm.workflow.settings import Settings
from clm.workflow.target_check import check_targets

log = logging.getLogger(__name__)


def _registry(settings: Settings) -> DynamoRegistry:
    return DynamoRegistry(client("dynamodb"), settings.registry_table)


def _rollouts(settings: Settings) -> RolloutStore:
    return RolloutStore(client("dynamodb"), settings.registry_table)


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
    cluster's lock held wakes the holder's parked drains. A provision its rollout holds is skipped, unless the input
    says `override_rollout: true` (`clm provision --override-rollout`).
    """
    settings = Settings.from_env()
    config_version = ConfigSources(settings.config_source, client).version  # the cluster's channel picks it
    registry, cluster_id = _registry(settings), event["cluster_id"]
    reason = (event.get("input") or {}).get("reason")
    wake = None if reason == INTERRUPTED else partial(_wake, registry, cluster_id, event["execution"])
    overridden = (event.get("input") or {}).get("override_rollout") is True  # an operator's StartExecution only
    hold = None if overridden else rollout_gate.run_hold(_rollouts(settings))
    execution = event["execution"]
    plan = run.begin(
        registry, config_version, cluster_id, execution, execution_running, wake, hold=hold, apply_only=is_apply_only
    )
    if plan.action != run.SKIP:  # the run begins its work (a skip changes nothing: no event)
        cluster_events.announce(cluster_events.started(registry.get(cluster_id), plan, event["execution"]))
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


MANAGE_ETCD_ENV = "CLM_MANAGE_ETCD_STACK"  # "true": CLM's etcd stack is provisioned (CDK context clm:manageEtcdStack)


def render(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id}` -> the key of the stored rendering and a summary (version, node pools, components); node-pool
    stacks see the cluster stack's current outputs (placeholders before it exists)."""
    from clm.workflow.render_step import render_to_s3  # YAML and the renderer (Jinja2): this step's alone

    settings = Settings.from_env()
    cluster = _registry(settings).get(event["cluster_id"])
    where = target_aws.of_event(event)
    tree = ConfigSources(settings.config_source, client).for_cluster(cluster).fetch()
    inputs = _render_inputs(where, files_store=_files_store(where, False), etcd_store=_etcd_store(where, False))
    outputs = _cluster_outputs(where, cluster)
    return render_to_s3(client("s3"), settings.artefact_bucket, tree, cluster, inputs, outputs)


def node_pools(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering}` -> `{rendering}`: after the cluster stack, the key of the run's rendering whose node
    pools' stacks were rendered with its outputs and whose bootstrap archives are uploaded (idempotent). For a
    zalando-eks cluster first its alias proved its own (AliasNotUnique, KubeAuthError), then CLM's
    ZalandoEKSCreationHook (provisioner/zalando_eks.go: clm.workflow.eks_hook): the EKS cluster's details written
    back into the registry, the rendering's API URL switched to its endpoint."""
    from clm.render.renderer import Renderer
    from clm.version import desired_version
    from clm.workflow import eks_hook
    from clm.workflow.render_step import render_node_pools

    settings = Settings.from_env()
    registry = _registry(settings)
    cluster = registry.get(event["cluster_id"])
    where = target_aws.of_event(event)
    outputs = _cluster_outputs(where, cluster) or {}
    details = None
    if cluster.is_eks:
        eks_hook.ensure_name_unique(registry.list_clusters(), cluster)
        details = eks_hook.describe(where.client("eks"), cluster)
        cluster = eks_hook.write_back(registry, cluster, details)

    def rendered(files_store: Any, values: dict[str, Any], first: Any) -> Any:
        tree = ConfigSources(settings.config_source, client).for_cluster(cluster).fetch()
        renderer = Renderer(tree, _render_inputs(where, files_store=files_store, etcd_store=_etcd_store(where, False)))
        if details is None:
            return renderer.render(cluster, values)
        result = renderer.render(eks_hook.hooked(cluster, details), values, zone_url=cluster.api_server_url)
        spec = eks_hook.as_first_seen(cluster, first.cluster.config_items)  # what the run's version hashes
        return dataclasses.replace(result, version=str(desired_version(spec, tree.version)))

    learnt = dataclasses.asdict(details) if details else None
    key = render_node_pools(
        client("s3"), settings.artefact_bucket, event["rendering"], outputs, rendered, _files_store(where, True), learnt
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
    where = target_aws.of_event(event)

    def rendered(etcd_store: Any) -> Any:
        tree = ConfigSources(settings.config_source, client).for_cluster(cluster).fetch()
        renderer = Renderer(tree, _render_inputs(where, etcd_store=etcd_store))
        return renderer.render(cluster, {OUTPUTS_VALUE: PendingOutputs()})  # the etcd stack reads no outputs

    upload_etcd_files(client("s3"), settings.artefact_bucket, event["rendering"], rendered, _etcd_store(where, True))
    return {}


def _render_inputs(where: target_aws.TargetAws, **stores: Any) -> Any:
    """What templates may ask AWS at render (clm.render.inputs): decrypted config items (the hub's KMS, only with the
    keys the deployment names), EC2 (amiID, instance types, the network) and ACM/KMS of the cluster's target, the
    registry's clusters, each asked only if a template needs it; `stores`: where node files go (files_store,
    etcd_store)."""
    import dataclasses

    from clm.render.inputs import RenderInputs
    from clm.render.secrets import keys_from_env

    inputs = RenderInputs.from_aws(where.client, keys_from_env(os.environ), decrypt_client=client)
    registry = _registry(Settings.from_env())  # the account's clusters, for CLM's cluster methods (read if used)
    return dataclasses.replace(inputs, list_clusters=registry.list_clusters, **stores)


def _cluster_outputs(where: target_aws.TargetAws, cluster: Any) -> dict[str, str] | None:
    """The cluster stack's outputs (OutputKey -> OutputValue), None when it does not exist."""
    from clm.stacks.cfn import stack_outputs
    from clm.stacks.names import cluster_stack_name

    return stack_outputs(where.client("cloudformation"), cluster_stack_name(cluster))


def _files_store(where: target_aws.TargetAws, upload: bool) -> Any:
    """Node pools' archives: uploaded to the node-files bucket of the cluster's target, or only their paths computed
    (then, without the hub's setting, CLM's bucket of the cluster's account and region)."""
    from clm.render.node_files import PlannedFiles, UploadedFiles

    bucket = where.node_files_bucket
    if not bucket:
        return None
    return UploadedFiles(bucket, where.client("s3"), lambda: where.client("kms")) if upload else PlannedFiles(bucket)


def _etcd_store(where: target_aws.TargetAws, upload: bool) -> Any:
    """The etcd files' archive (clm.render.etcd) when the deployment manages CLM's etcd stack (CLM_MANAGE_ETCD_STACK
    is "true"): uploaded to the node-files bucket, or only its path computed; None otherwise."""
    if os.environ.get(MANAGE_ETCD_ENV) != "true":
        return None
    return _files_store(where, upload)


def succeed(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, execution, plan, version}` -> record success (or decommissioned) and release the lock."""
    plan, registry, version = run.RunPlan(**event["plan"]), _registry(Settings.from_env()), event.get("version", "")
    before = registry.get(plan.cluster_id)
    run.succeed(registry, plan, event["execution"], version)
    cluster_events.announce(cluster_events.succeeded(before, plan, event["execution"], version))
    left = {"left_outdated": plan.left_outdated} if plan.apply_only and any(plan.left_outdated.values()) else {}
    followed = _follow_change(plan, before, event["execution"])
    return {"cluster_id": plan.cluster_id, "action": plan.action, "version": version, **left, **followed}


def fail(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, execution, plan, error: {Error, Cause, Step?}}` -> the problem recorded on the cluster; a run
    that was bringing the cluster a new configuration version halts that version's rollout; then the lock is
    released (a reconcile that finds the cluster free finds the rollout halted, and starts no second run of it)."""
    error, settings = event.get("error") or {}, Settings.from_env()
    registry = _registry(settings)
    cluster = registry.get(event["cluster_id"])
    problem = run.fail(
        registry,
        event["cluster_id"],
        event["execution"],
        error.get("Error", "States.Runtime"),
        error.get("Cause", ""),
        error.get("Step", ""),
    )
    plan = run.RunPlan(**event["plan"]) if event.get("plan") else None
    for made in cluster_events.failures(cluster, plan, event["execution"], problem):  # before the halt's
        cluster_events.announce(made)
    halted = plan and rollout_gate.halt_on_failure(
        _rollouts(settings), cluster, plan.desired_version, event["execution"], problem
    )
    if halted:
        rollout_gate.publisher(lambda: client("events"), os.environ.get(EVENT_BUS_ENV, ""))([halted])
    registry.release_lock(event["cluster_id"], event["execution"])
    return {"cluster_id": event["cluster_id"], "problem": problem.title, "halted_rollout": bool(halted)}


def _follow_change(plan: run.RunPlan, cluster: Cluster, execution: str) -> dict[str, bool]:
    """After a successful run has released the lock: start the run of a change made during it (clm.workflow.run
    .changed_meanwhile) with a `Cluster Changed` event, as the registry trigger does; `{followed_change}` when
    there was one. Best effort: an event EventBridge refuses is logged, and reconcile brings the change. A failed
    run does not: its retry waits for the next 15-minute window (clm.workflow.reconcile), edited or not."""
    if not run.changed_meanwhile(plan, cluster):
        return {}
    from clm.workflow.registry_events import ClusterChange, PublishError, publish

    bus, name = os.environ.get(EVENT_BUS_ENV, ""), execution.rsplit(":", 1)[-1]
    change = ClusterChange(plan.cluster_id, f"registry: spec changed during run {name}")
    try:
        published = bool(bus) and publish(client("events"), bus, [change]) == 1
    except PublishError as exc:
        log.warning("change made during the run not followed: %s", exc)
        published = False
    return {"followed_change": published}


STEPS = {
    "begin": begin,
    "render": render,
    "node_pools": node_pools,
    "etcd_files": etcd_files,
    "park": park,
    "health_gate": health_gate.begin_gate,
    "succeed": succeed,
    "fail": fail,
    "check_targets": check_targets,
}
