"""The step of the `reconcile` function: select the clusters needing work and start their provision runs."""

from __future__ import annotations

import os
import time
from datetime import datetime
from typing import Any

from clm.aws import client
from clm.config.changes import ChangeScope, change_scope
from clm.config.channels import ConfigSources
from clm.errors import ConfigSourceError
from clm.model import Cluster
from clm.registry.dynamodb import DynamoRegistry
from clm.registry.rollouts import RolloutStore
from clm.targets import TargetPolicy
from clm.timestamps import utc_now
from clm.workflow import placement
from clm.workflow.bus import EVENT_BUS_ENV
from clm.workflow.follow_up import follow_up, loop_state
from clm.workflow.reconcile import running_names_of, select, select_unresolvable, start_runs
from clm.workflow.rollout_gate import gate, in_rollouts, publisher, rollout_policy
from clm.workflow.settings import Settings, SettingsError

MAX_LISTED = 50
DEFAULT_MAX_RUNNING = 10


def reconcile(event: dict[str, Any]) -> dict[str, Any]:
    """`{execution, input: {reason, change?}}` -> start provision runs (bounded by CLM_MAX_RUNNING) and say whether
    to look again for the deferred ones and those whose going run brings another version (clm.workflow.follow_up);
    invalid registry items and clusters whose configuration cannot be resolved are reported, not fatal (the latter
    also get a run that records it on them, or their decommission: clm.workflow.reconcile.select_unresolvable); so
    are the clusters needing a run in an account the deployment may not reach (`foreign`: no run is started, as it
    would only be refused: clm.targets).
    A config change (`change`: `{bucket, key}` or `{repository, branch}`) concerns only the clusters reading its
    source on its channel."""
    settings = Settings.from_env()
    state_machine = os.environ.get("CLM_PROVISION_STATE_MACHINE")
    if not state_machine:
        raise SettingsError("environment variable(s) not set: CLM_PROVISION_STATE_MACHINE")
    max_running = int(os.environ.get("CLM_MAX_RUNNING") or DEFAULT_MAX_RUNNING)
    sfn = client("stepfunctions")
    older, started = loop_state(sfn, event["execution"]) if event.get("execution") else (None, None)
    if older:
        return {"following": older, "again": False}
    # Listed before the registry is read: a run the gate waits for that ends meanwhile is followed (looked at again).
    running = running_names_of(sfn, state_machine)
    clusters, invalid, locks = DynamoRegistry(client("dynamodb"), settings.registry_table).list_clusters_locked()
    in_progress = {cluster_id for cluster_id, holder in locks.items() if holder.rsplit(":", 1)[-1] in running}
    sources = ConfigSources(settings.config_source, client)
    change = (event.get("input") or {}).get("change")
    scope = change_scope(settings.config_source, change) if isinstance(change, dict) else None
    versions, errors = _versions(sources, clusters, scope)
    concerned = [cluster for cluster in clusters if cluster.id in versions]
    unresolved = {cluster_id: error for cluster_id, error in errors}
    home = placement.deployment()
    policy = TargetPolicy.from_env(home=home.account)
    refused = {
        cluster.id: why
        for cluster in clusters
        if (cluster.id in versions or cluster.id in unresolved)
        and (where := placement.of_cluster(cluster)) != home
        and (why := policy.refusal(where))
    }
    now = time.time()
    needing = select(concerned, lambda cluster: versions[cluster.id], now)
    reachable = [selection for selection in needing if selection.cluster_id not in refused]
    gated = gate(
        reachable,
        {cluster.id: cluster for cluster in concerned},
        versions,
        lambda cluster: cluster.id not in refused and in_rollouts(cluster),
        RolloutStore(client("dynamodb"), settings.registry_table),
        lambda: rollout_policy(settings.config_source),
        utc_now(),
        publisher(lambda: client("events"), os.environ.get(EVENT_BUS_ENV, "")),
    )
    unresolvable = [s for s in select_unresolvable(clusters, unresolved, now) if s.cluster_id not in refused]
    result = start_runs(sfn, state_machine, [*gated.allowed, *unresolvable], max_running, running, in_progress)
    behind = bool(result["deferred"] or result["waiting_for_run"])  # a slot, or the cluster's going run, to free up
    waiting = behind or (gated.rolling and bool(result["started"] or running))
    return {
        "config_versions": sorted(set(versions.values()))[:MAX_LISTED],
        "change": None if scope is None else {"source": scope.source, "channel": scope.channel},
        "clusters": len(clusters),
        "concerned": len(concerned),
        "selected": len(gated.allowed),
        **{key: {"count": len(ids), "ids": ids[:MAX_LISTED]} for key, ids in result.items()},
        **gated.report(),
        "invalid": [
            {"cluster_id": cluster_id, "error": error[:300]} for cluster_id, error in (invalid + errors)[:MAX_LISTED]
        ],
        "foreign": [
            {"cluster_id": s.cluster_id, "reason": refused[s.cluster_id]} for s in needing if s.cluster_id in refused
        ][:MAX_LISTED],
        **follow_up(waiting, started, wake_at=gated.wake_at),
    }


def _versions(
    sources: ConfigSources, clusters: list[Cluster], scope: ChangeScope | None
) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The config version of every cluster the change concerns (each source and channel read once), and the
    clusters whose channels cannot be resolved (a bad override_channel, a missing branch) with why."""
    versions, errors = {}, []
    for cluster in clusters:
        try:
            if scope is None or scope.concerns(sources.channels(cluster)):
                versions[cluster.id] = sources.version(cluster)
        except ConfigSourceError as exc:
            errors.append((cluster.id, str(exc)))
    return versions, errors


def settle_upload(event: dict[str, Any]) -> dict[str, Any]:
    """`{input: {change}, started}` -> `{wait_seconds, superseded}`: whether the configuration upload that started
    this reconcile (at `started`, ISO 8601) is quiet enough to read (clm.workflow.upload_settle)."""
    from clm.workflow.upload_settle import settle

    settings = Settings.from_env()
    now = time.time()
    waited = now - datetime.fromisoformat(event["started"].replace("Z", "+00:00")).timestamp()
    change = (event.get("input") or {}).get("change")
    return settle(settings.config_source, change if isinstance(change, dict) else None, client, now, waited)


STEPS = {"reconcile": reconcile, "settle_upload": settle_upload}
