"""`clm config push`: upload a configuration repository to an S3 source so that CLM reads it at once and whole."""

from __future__ import annotations

from pathlib import Path

import click
from botocore.exceptions import BotoCoreError, ClientError

from clm.cli.context import CliContext
from clm.cli.errors import CliError
from clm.cli.options import pass_cli
from clm.cli.output import emit
from clm.config.push import PushPlan, local_tree, plan_push, push
from clm.config.pushed import MARKER
from clm.config.s3 import S3Source
from clm.errors import ConfigSourceError


@click.group()
def config() -> None:
    """The configuration repository CLM reads."""


@config.command("push")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("uri", metavar="S3_URI")
@click.option("--channel", default="", help="Push to this channel's prefix (<prefix><channel>/cluster/).")
@click.option(
    "--delete/--no-delete",
    default=True,
    show_default=True,
    help="Delete the objects the tree does not have (--no-delete keeps them, and the marker names them too).",
)
@click.option("--dry-run", is_flag=True, help="Show what would be uploaded and deleted; change nothing.")
@pass_cli
def push_cmd(cli: CliContext, directory: Path, uri: str, channel: str, delete: bool, dry_run: bool) -> None:
    """Make S3_URI (s3://bucket/prefix, as CLM_CONFIG_SOURCE names it) hold exactly DIRECTORY's cluster/ tree:
    upload new and changed files, delete the files the tree no longer has, then write the push marker
    (cluster/.clm-push.json, naming every file). Reconcile reads a marked push at once and whole; any other upload
    is read once it has been quiet for 5 s.

    \b
    clm config push ./config s3://my-config-bucket/config/
    clm config push ./config s3://my-config-bucket/config/ --channel beta --dry-run
    """
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    if not uri.startswith("s3://") or not bucket:
        raise CliError(f"{uri}: expected s3://bucket/prefix")
    source = S3Source(cli.client("s3"), bucket, prefix, channel)
    files = local_tree(directory)
    plan = plan_push(source, files, delete=delete)
    if dry_run:
        title = f"would upload {len(plan.upload)}, delete {len(plan.delete)}, leave {len(plan.kept)} unchanged"
        emit(_rows(plan, "would upload", "would delete"), ["path", "action"], cli.output, title=title)
        return
    try:
        push(source, files, plan)
    except (BotoCoreError, ClientError, ConfigSourceError) as exc:
        raise CliError(
            f"push to {source.describe()} stopped: {exc}; no marker was written, so what it uploaded is read once "
            "quiet for 5 s, as any upload: push again"
        ) from exc
    title = f"uploaded {len(plan.upload)}, deleted {len(plan.delete)}, left {len(plan.kept)} unchanged; marked {MARKER}"
    emit(_rows(plan, "uploaded", "deleted"), ["path", "action"], cli.output, title=title)


def _rows(plan: PushPlan, uploaded: str, deleted: str) -> list[dict[str, str]]:
    """One row per file the push changes."""
    return [{"path": p, "action": uploaded} for p in plan.upload] + [
        {"path": p, "action": deleted} for p in plan.delete
    ]
