"""`clm rollout plan`: the waves a rollout policy makes of the registry's clusters (nothing is started)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from clm.cli.context import CliContext
from clm.cli.fleet import with_where
from clm.cli.options import pass_cli, registry_file_option
from clm.cli.output import Column, emit, print_warning, short_id
from clm.rollout.default import DEFAULT_POLICY

WAVE_COLUMNS = [Column("wave", keep=True), Column("concurrency", "at once"), Column("bake")]
# Account and region columns only where the clusters differ in them (clm.cli.fleet), after the cluster.
CLUSTER_COLUMNS = [Column("cluster", short=short_id), Column("environment", "env"), Column("criticality", "crit")]
_SAMPLE = "\n".join("  " + line for line in DEFAULT_POLICY.splitlines())


@click.group()
def rollout() -> None:
    """Rollouts across the fleet: in which waves clusters take a configuration change (docs/rollouts.md)."""


@rollout.command(
    epilog=f"""\b
The built-in policy, a starting point for cluster/rollout.yaml:
{_SAMPLE}

\b
A wave's keys: name; select and exclude (environment, criticality, channel,
account, region, clusters, config_items: {{item: value}}; a value or a list,
all given must match); size (take at most this many, the rest go on);
concurrency (a count or a percentage of the wave, rounded up); bake (a Go
duration, at most 168h); order (criticality, environment, id, region, account,
channel; -criticality for the most critical first). A cluster goes to the first
wave that takes it; those no wave takes to a last wave, `unmatched`.
"""
)
@click.option(
    "--config",
    "config_uri",
    envvar="CLM_CONFIG_SOURCE",
    help="Config source (as `clm render --config`) whose first source's cluster/rollout.yaml on the default "
    "channel is the policy. Without it, or without that file: the built-in policy below.",
)
@registry_file_option
@pass_cli
def plan(cli: CliContext, config_uri: str | None, registry_file: Path | None) -> None:
    """Show the waves the rollout policy makes of the registry's clusters (decommissioned ones left out): each
    wave's clusters in order, how many change at once and the bake before the next wave. Changes nothing.

    Reconcile follows these waves when a configuration change goes out (`clm rollout status` shows it moving).
    The policy's freezes (no node roll from `from` to `to`) are listed. An invalid policy stops with its file and
    line.
    """
    from clm.registry.clusters_yaml import load_clusters
    from clm.rollout.assign import assign
    from clm.rollout.default import default_policy
    from clm.timestamps import format_time

    policy = default_policy() if not config_uri else _configured(cli, config_uri)
    if registry_file is not None:
        clusters = load_clusters(registry_file.read_text(), source=str(registry_file))
    else:
        clusters = cli.registry().list_clusters()
    active = [cluster for cluster in clusters if cluster.lifecycle_status != "decommissioned"]
    waves = assign(active, policy)
    for wave in waves:
        if not wave.clusters:
            print_warning(f"wave {wave.wave.name} takes no cluster")
    title = f"policy: {policy.source}; {len(active)} clusters in {len(waves)} waves"
    title += f", at most {policy.max_concurrency} at once"
    freezes = [{"from": format_time(f.start), "to": format_time(f.end), "reason": f.reason} for f in policy.freezes]
    title += "".join(f"; frozen {f['from']} to {f['to']} ({f['reason']})" for f in freezes)
    data = {"policy": policy.source, "max_concurrency": policy.max_concurrency, "waves": [w.to_dict() for w in waves]}
    data["freezes"] = freezes
    rows = _rows(data["waves"])
    columns = [*WAVE_COLUMNS, *with_where(CLUSTER_COLUMNS, [row for row in rows if row["cluster"] != "-"])]
    emit(rows, columns, cli.output, title, data)


def _configured(cli: CliContext, config_uri: str) -> Any:
    """The policy of the configuration's first source on the default channel (the built-in one when it has none)."""
    from clm.config.uri import one_source, parse_sources
    from clm.rollout.source import policy_of

    return policy_of(one_source(parse_sources(config_uri)[0][1], cli.client).fetch())


def _rows(waves: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per cluster, the wave's settings on its first row; a wave without clusters as one row."""
    rows = []
    for wave in waves:
        head = {"wave": wave["wave"], "concurrency": wave["concurrency"], "bake": wave["bake"]}
        for index, facts in enumerate(wave["clusters"]):
            cluster = {"cluster": facts["id"], **{key: value for key, value in facts.items() if key != "id"}}
            rows.append({**(head if index == 0 else {}), **cluster})
        if not wave["clusters"]:
            rows.append({**head, "cluster": "-"})
    return rows
