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


def render(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id}` -> the key of the stored rendering and a summary (version, node pools, components)."""
    from clm.render.account_lookups import AccountLookups
    from clm.render.lookups import Ec2Lookups
    from clm.render.secrets import KmsDecrypter, keys_from_env
    from clm.workflow.render_step import render_to_s3  # YAML and the renderer (Jinja2): this step's alone

    settings = Settings.from_env()
    cluster = _registry(settings).get(event["cluster_id"])
    tree = ConfigSources(settings.config_source, client).for_cluster(cluster).fetch()
    decrypt = KmsDecrypter(lambda: client("kms"), keys_from_env(os.environ))  # only the keys the deployment names
    lookups = Ec2Lookups(lambda: client("ec2"))  # amiID, instance types: asked only if a template needs them
    account = AccountLookups(lambda: client("acm"), lambda: client("kms"))  # only if a template names them
    return render_to_s3(client("s3"), settings.artefact_bucket, tree, cluster, decrypt, lookups, account)


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


STEPS = {"begin": begin, "render": render, "park": park, "succeed": succeed, "fail": fail}
