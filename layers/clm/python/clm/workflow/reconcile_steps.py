"""The step of the `reconcile` function: select the clusters needing work and start their provision runs."""

from __future__ import annotations

import os
import time
from typing import Any

from clm.aws import client
from clm.config.uri import source_from_uri
from clm.registry.dynamodb import DynamoRegistry
from clm.workflow.follow_up import follow_up, loop_state
from clm.workflow.reconcile import select, start_runs
from clm.workflow.settings import Settings, SettingsError

MAX_LISTED = 50
DEFAULT_MAX_RUNNING = 10


def reconcile(event: dict[str, Any]) -> dict[str, Any]:
    """`{execution}` -> start provision runs (bounded by CLM_MAX_RUNNING) and say whether to look again for the
    deferred ones (clm.workflow.follow_up); invalid registry items are reported, not fatal."""
    settings = Settings.from_env()
    state_machine = os.environ.get("CLM_PROVISION_STATE_MACHINE")
    if not state_machine:
        raise SettingsError("environment variable(s) not set: CLM_PROVISION_STATE_MACHINE")
    max_running = int(os.environ.get("CLM_MAX_RUNNING") or DEFAULT_MAX_RUNNING)
    sfn = client("stepfunctions")
    older, started = loop_state(sfn, event["execution"]) if event.get("execution") else (None, None)
    if older:
        return {"following": older, "again": False}
    clusters, invalid = DynamoRegistry(client("dynamodb"), settings.registry_table).list_clusters_report()
    config_version = source_from_uri(settings.config_source, client).version()
    selections = select(clusters, config_version, time.time())
    result = start_runs(sfn, state_machine, selections, max_running)
    return {
        "config_version": config_version,
        "clusters": len(clusters),
        "selected": len(selections),
        **{key: {"count": len(ids), "ids": ids[:MAX_LISTED]} for key, ids in result.items()},
        "invalid": [{"cluster_id": cluster_id, "error": error[:300]} for cluster_id, error in invalid[:MAX_LISTED]],
        **follow_up(len(result["deferred"]), started),
    }


STEPS = {"reconcile": reconcile}
