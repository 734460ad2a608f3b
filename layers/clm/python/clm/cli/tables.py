"""Tables drawn as kubectl draws its lists, without borders, one line per row (`-o table` and `-o wide`).

`table` fits the console's width: columns shorten their values as they declare (ids, versions); when the rows are
still too wide, the free text of `note` columns moves to numbered notes under the table, the widest column first
(a cell then shows its note's number, equal texts sharing one); the widest cells left are cut in the middle ("…").
`wide` shows every column of every row in full on one line, however long (for grep and a scrolling terminal).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.text import Text

GAP = 2  # spaces between two columns
MIN_CELL = 8  # a cut cell keeps at least this many characters (or its header's), "…" included
EMPTY = ("", "-")  # cells that stand for nothing: never shortened, never a note
_CONTROL = frozenset(map(chr, [*range(0x20), *range(0x7F, 0xA0)])) - set("\n\t")
LINE_BREAKS = str.maketrans(dict.fromkeys("\n\r\t\v\f\x1c\x1d\x1e\x85\u2028\u2029", " "))


@dataclass(frozen=True)
class Column:
    """A table column: the row key, its header in `table` (`wide` shows the key), how `table` shortens its values,
    whether `table` may move them (free text) to notes under the table, and whether it keeps them whole unless
    cutting the other columns' is not enough (values already shortened to what identifies them)."""

    key: str
    header: str = ""
    short: Callable[[str], str] | None = None
    note: bool = False
    keep: bool = False


def print_table(
    console: Console, rows: Sequence[dict[str, Any]], columns: Sequence[Column], wide: bool, title: str | None
) -> None:
    """Print `title` and the rows under their headers: `wide` in full, else fitted to the console's width."""
    if title:
        console.print(Text(visible(title), style="italic"), soft_wrap=wide)
    headers = [column.key if wide else column.header or column.key for column in columns]
    cells = [[_one_line(str(row.get(column.key, ""))) for column in columns] for row in rows]
    notes: list[str] = []
    if not wide:
        cells = [[_shorten(column, cell) for column, cell in zip(columns, row, strict=True)] for row in cells]
        cells, notes = fit(headers, cells, columns, console.width)
    widths = _widths(headers, cells)
    for line in (_line(headers, widths, "bold"), *(_line(row, widths) for row in cells)):
        if wide:
            console.print(line, soft_wrap=True)
        else:  # cut at the console's edge, should a header be wider than it
            console.print(line, no_wrap=True, overflow="ellipsis")
    for number, note in enumerate(notes, start=1):
        _print_note(console, f"[{number}] ", note)


def fit(
    headers: list[str], cells: list[list[str]], columns: Sequence[Column], width: int
) -> tuple[list[list[str]], list[str]]:
    """`cells` (shortened) fitted to `width` with GAP between columns, and the texts of the notes they refer to:
    note columns become notes, the widest first, until the rows fit; then the widest cells are cut, those of `keep`
    columns only when cutting the others' is not enough."""
    noted: list[int] = []
    fitted, notes = cells, []
    while _total(widths := _widths(headers, fitted)) > width:
        left = [index for index, column in enumerate(columns) if column.note and index not in noted]
        if not left:
            break
        noted.append(max(left, key=lambda index: widths[index]))
        fitted, notes = _with_notes(cells, sorted(noted))
    floors = [max(cell_len(header), min(MIN_CELL, natural)) for header, natural in zip(headers, widths, strict=True)]
    budget = width - GAP * (len(headers) - 1)
    kept = [natural if column.keep else floor for natural, floor, column in zip(widths, floors, columns, strict=True)]
    widths = _collapse(_collapse(widths, kept, budget), floors, budget)
    return [[elide_middle(cell, size) for cell, size in zip(row, widths, strict=True)] for row in fitted], notes


def elide_middle(text: str, width: int) -> str:
    """`text` if it fits `width` cells, else its start and its (longer) end around "…", `width` cells in all."""
    if cell_len(text) <= width:
        return text
    if width < 3:
        return set_cell_size(text, width)
    head = (width - 1) // 2
    tail = width - 1 - head
    return set_cell_size(text, head) + "…" + set_cell_size(text[::-1], tail)[::-1]


def _one_line(text: str) -> str:
    """`text` with its line breaks and tabs as spaces (a row is one line), other control characters shown."""
    return visible(text.translate(LINE_BREAKS))


def visible(text: str) -> str:
    """`text` with every control character but line breaks and tabs shown as its escape (`\\x1b`): values from the
    registry or configuration reach the terminal as text, never as its commands (an escape sequence that clears
    the screen, retitles the window or writes the clipboard)."""
    return "".join(f"\\x{ord(c):02x}" if c in _CONTROL else c for c in text)


def literal(*parts: str | tuple[str, str]) -> Text:
    """The parts (text, or text and style) as one Text, each text through `visible`: printed as it is, never
    as markup nor as the terminal's commands."""
    return Text.assemble(*((visible(part[0]), part[1]) if isinstance(part, tuple) else visible(part) for part in parts))


def _shorten(column: Column, cell: str) -> str:
    return column.short(cell) if column.short and cell not in EMPTY else cell


def _with_notes(cells: list[list[str]], noted: list[int]) -> tuple[list[list[str]], list[str]]:
    """The cells with those of the `noted` columns replaced by `[n]`, and the notes' texts (n-1 indexes them)."""
    numbers: dict[str, int] = {}
    replaced = []
    for row in cells:
        copy = list(row)
        for index in noted:
            if row[index] not in EMPTY:
                copy[index] = f"[{numbers.setdefault(row[index], len(numbers) + 1)}]"
        replaced.append(copy)
    return replaced, list(numbers)


def _widths(headers: list[str], cells: list[list[str]]) -> list[int]:
    return [max(cell_len(cell) for cell in column) for column in zip(headers, *cells, strict=True)]


def _total(widths: list[int]) -> int:
    return sum(widths) + GAP * (len(widths) - 1)


def _collapse(widths: list[int], floors: list[int], budget: int) -> list[int]:
    """`widths` narrowed one cell at a time, the widest column above its floor first, until they sum to `budget`."""
    widths = list(widths)
    while sum(widths) > budget:
        above = [index for index, width in enumerate(widths) if width > floors[index]]
        if not above:
            break
        widths[max(above, key=lambda index: widths[index])] -= 1
    return widths


def _line(cells: list[str], widths: list[int], style: str = "") -> Text:
    padded = [cell + " " * (width - cell_len(cell)) for cell, width in zip(cells, widths, strict=True)]
    return Text((" " * GAP).join(padded).rstrip(), style=style)


def _print_note(console: Console, label: str, note: str) -> None:
    """`label` and `note`, wrapped to the console's width under the note's first word."""
    indent = cell_len(label)
    lines = Text(note).wrap(console, max(console.width - indent, 1))
    for index, line in enumerate(lines):
        line.rstrip()  # the space a line was wrapped at
        console.print(Text(label if index == 0 else " " * indent) + line, soft_wrap=True)
