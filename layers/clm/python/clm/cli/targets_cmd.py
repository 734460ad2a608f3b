"""`clm targets`: every account and region the registry's clusters are in, and whether the deployed hub may and can
act there, as its runs would (its run function checks: clm.cli.hub.check_targets)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import click

from clm.cli.context import CliContext
from clm.cli.deployment import stack_option
from clm.cli.fleet import fleet_options, select
from clm.cli.options import pass_cli
from clm.cli.output import Column, emit, print_error
from clm.targets import DEPLOY_HINT, Target

COLUMNS = [
    Column("account"),
    Column("region"),
    Column("clusters"),
    Column("allowed"),
    Column("reachable"),
    Column("stack"),
    Column("why", note=True),
]
HELP = f"""Every account and region the registry's clusters are in (`--account`, `--region` to narrow), and whether
the deployed hub (--stack) may and can act there, as its runs would: the hub's run function checks each (only the
hub's roles may assume target roles).

\b
Columns:
  clusters   how many of the registry's clusters are there
  allowed    yes: the hub's settings allow the account (clm:targetAccounts,
             clm:targetInclude, clm:targetExclude; the hub's own account always)
  reachable  yes: the hub assumed its target role there (clm-target-<region>-run)
             and landed in that account; -: not tried (not allowed)
  stack      the target stack ClmTarget there: its status, `hub` in the hub's own
             account and region (which needs none), `none` when there is none
  why        the first thing wrong, and its fix

\b
Fixes:
  not allowed    deploy the hub naming the account (docs/deploy.md, section 9):
                 cdk deploy Clm -c clm:targetAccounts=<account>,...
                 (or widen clm:targetInclude, narrow clm:targetExclude)
  not reachable  with that account's admin credentials, in that region:
                 {DEPLOY_HINT.replace("`", "")}
  another hub    the stack's output Hub names another hub: deploy it again with
                 -c clm:hub=<this hub's account>:<region>

A cluster of a target not allowed or not reachable is refused by its runs (a problem on the cluster).
Needs: the registry (Scan), the stack's outputs (DescribeStacks) and lambda:InvokeFunction on the run function.
"""


@click.command(help=HELP)
@fleet_options
@stack_option
@pass_cli
def targets(cli: CliContext, accounts: tuple[str, ...], regions: tuple[str, ...], stack: str) -> None:
    """The registry's accounts and regions, with the hub's check of each (the command's help: HELP)."""
    from clm.cli.hub import check_targets

    clusters, invalid = cli.registry().list_clusters_report()
    counts = Counter(Target(c.account_id, c.region) for c in select(clusters, accounts, regions))
    places = sorted(counts, key=lambda t: (t.account, t.region))
    hub, checks = check_targets(cli, stack, places) if places else ("", [])
    data = [
        {"account": c["account"], "region": c["region"], "clusters": counts[Target(c["account"], c["region"])], **c}
        for c in checks
    ]
    rows = [_row(entry) for entry in data]
    title = f"{len(rows)} account(s) and region(s) of {sum(counts.values())} clusters" + (f", hub {hub}" if hub else "")
    emit(rows, COLUMNS, cli.output, title=title, data=data)
    for cluster_id, message in invalid:
        print_error(f"cluster {cluster_id} is invalid in the registry: {message}")


def _row(check: dict[str, Any]) -> dict[str, Any]:
    """A target's check as the table shows it: yes/no, `-` for what was not looked at."""
    return {
        **check,
        "allowed": _yes_no(check["allowed"]),
        "reachable": _yes_no(check["reachable"]),
        "stack": check["stack"] or "-",
        "why": check["why"] or "-",
    }


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"
