"""Printing results as a rich table, JSON or YAML (`-o table|wide|json|yaml`).

`table` fits a terminal: a table with shortened columns (ids, versions) is drawn without borders, as kubectl
draws its lists, its short and one-word columns on one line, the free text wrapping; `wide` shows every value in
full.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from clm.yamlutil import dump

console = Console()
errors = Console(stderr=True)
TABULAR = ("table", "wide")
SHORT_HASH = 7  # characters of a hash shown, as git shows commits
EMPTY = ("", "-")


def short_id(cluster_id: str) -> str:
    """A cluster id as tables show it: its last part, the local id (as an execution is shown by its name)."""
    return cluster_id.rsplit(":", 1)[-1]


def short_version(version: str) -> str:
    """A version `<config>#<spec hash>` as tables show it: each hash cut to 7 characters."""
    config, sep, spec = version.rpartition("#")
    return f"{config[:SHORT_HASH]}{sep}{spec[:SHORT_HASH]}" if sep else version[:SHORT_HASH]


@dataclass(frozen=True)
class Column:
    """A table column: the row key, its header, how `table` (not `wide`) shortens its values to one line, and
    whether its values may wrap there (free text)."""

    key: str
    header: str = ""
    short: Callable[[str], str] | None = None
    wrap: bool = False


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
        declared = [Column(c, wrap=True) if isinstance(c, str) else c for c in columns]
        console.print(_table(rows, declared, fmt == "wide", title))


def _table(rows: Sequence[dict[str, Any]], columns: list[Column], wide: bool, title: str | None) -> Table:
    compact = not wide and any(column.short for column in columns)
    if compact:
        table = Table(title=title, header_style="bold", box=None, padding=(0, 2, 0, 0), title_justify="left")
    else:
        table = Table(title=title, header_style="bold")
    for column in columns:
        header = column.key if wide else column.header or column.key
        table.add_column(header, overflow="fold", no_wrap=compact and not column.wrap)
    for row in rows:
        cells = []
        for column in columns:
            text = str(row.get(column.key, ""))
            cells.append(column.short(text) if column.short and not wide and text not in EMPTY else text)
        table.add_row(*cells)
    return table


def print_error(message: str) -> None:
    """One red line on stderr, printed literally (no markup)."""
    errors.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)


def print_warning(message: str) -> None:
    """One yellow line on stderr, printed literally (no markup)."""
    errors.print(Text.assemble(("warning: ", "bold yellow"), message), soft_wrap=True)
