"""Printing results as a rich table, JSON or YAML (`-o table|json|yaml`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from clm.yamlutil import dump

console = Console()
errors = Console(stderr=True)


def emit(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], fmt: str, title: str | None = None, data: Any = None
) -> None:
    """Print rows as a table, or `data` (default: the rows) as JSON/YAML."""
    payload = rows if data is None else data
    if fmt == "json":
        sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
    elif fmt == "yaml":
        sys.stdout.write(dump(payload))
    else:
        table = Table(title=title, header_style="bold")
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(str(row.get(column, "")) for column in columns))
        console.print(table)


def print_error(message: str) -> None:
    """One red line on stderr, printed literally (no markup)."""
    errors.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)


def print_warning(message: str) -> None:
    """One yellow line on stderr, printed literally (no markup)."""
    errors.print(Text.assemble(("warning: ", "bold yellow"), message), soft_wrap=True)
