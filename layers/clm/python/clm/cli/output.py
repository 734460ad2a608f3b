"""Printing results as a table, JSON or YAML (`-o table|wide|json|yaml`): tables as clm.cli.tables draws them,
`table` fitting the terminal (80 columns and up) and `wide` showing every value in full.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from clm.cli.tables import Column, literal, print_table
from clm.yamlutil import dump

console = Console()
errors = Console(stderr=True)
TABULAR = ("table", "wide")
SHORT_HASH = 7  # characters of a hash shown, as git shows commits


def short_id(cluster_id: str) -> str:
    """A cluster id as tables show it: its last part, the local id (as an execution is shown by its name)."""
    return cluster_id.rsplit(":", 1)[-1]


def short_version(version: str) -> str:
    """A version `<config>#<spec hash>` as tables show it: each hash cut to 7 characters."""
    config, sep, spec = version.rpartition("#")
    return f"{config[:SHORT_HASH]}{sep}{spec[:SHORT_HASH]}" if sep else version[:SHORT_HASH]


def version_column(key: str, header: str = "") -> Column:
    """A column of versions: shown by short_version in `table`, and cut there only when nothing else can be."""
    return Column(key, header, short_version, keep=True)


def emit(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str | Column],
    fmt: str,
    title: str | None = None,
    data: Any = None,
) -> None:
    """Print rows as a table (`wide`: nothing shortened), or `data` (default: the rows) as JSON/YAML."""
    payload = rows if data is None else data
    if fmt == "json":
        sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
    elif fmt == "yaml":
        sys.stdout.write(dump(payload))
    else:
        declared = [Column(column) if isinstance(column, str) else column for column in columns]
        print_table(console, rows, declared, fmt == "wide", title)


def print_error(message: str) -> None:
    """One red line on stderr, printed literally (no markup)."""
    errors.print(literal(("error: ", "bold red"), message), soft_wrap=True)


def print_warning(message: str) -> None:
    """One yellow line on stderr, printed literally (no markup)."""
    errors.print(literal(("warning: ", "bold yellow"), message), soft_wrap=True)
