"""A fleet across accounts and regions in the CLI's lists: `--account` and `--region` filters, and account and region
columns shown where the clusters listed differ in them (JSON and YAML always carry both)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click

from clm.cli.tables import Column
from clm.model import Cluster

WHERE = ("account", "region")


def fleet_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add `--account` and `--region` (each repeatable) to a listing command."""
    command = click.option(
        "--region", "regions", multiple=True, metavar="REGION", help="Only clusters in this region (repeatable)."
    )(command)
    return click.option(
        "--account",
        "accounts",
        multiple=True,
        metavar="ACCOUNT",
        help="Only clusters in this AWS account, its 12 digits (repeatable).",
    )(command)


def select(clusters: Iterable[Cluster], accounts: Sequence[str], regions: Sequence[str]) -> list[Cluster]:
    """The clusters in one of `accounts` and one of `regions` (an empty filter keeps all)."""
    return [c for c in clusters if (not accounts or c.account_id in accounts) and (not regions or c.region in regions)]


def where(cluster: Cluster) -> dict[str, str]:
    """The cluster's account (12 digits) and region."""
    return {"account": cluster.account_id, "region": cluster.region}


def with_where(columns: Sequence[str | Column], rows: Sequence[dict[str, Any]]) -> list[str | Column]:
    """`columns` with account and region after the first (the cluster), each only if the rows differ in it."""
    differing = [Column(key) for key in WHERE if len({row.get(key) for row in rows}) > 1]
    return [*columns[:1], *differing, *columns[1:]]
