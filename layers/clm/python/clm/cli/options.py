"""What several `clm` commands share: the CLI context decorator and the config/registry-file options."""

from __future__ import annotations

from pathlib import Path

import click

from clm.cli.context import CliContext

pass_cli = click.make_pass_decorator(CliContext)

config_option = click.option(
    "--config",
    "config_uri",
    required=True,
    envvar="CLM_CONFIG_SOURCE",
    help="Config source: a folder, s3://bucket/prefix or codecommit://repo@branch; several, comma-separated as "
    "[name=]URI, combine as Zalando CLM combines them (as `clm render --help` describes).",
)

registry_file_option = click.option(
    "--registry-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read clusters from this clusters.yaml instead of the registry table.",
)
