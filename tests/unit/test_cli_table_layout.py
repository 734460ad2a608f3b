"""clm.cli.tables: `table` fits any console of 80 columns and more with one line per row, its free text in notes;
`wide` prints every value in full whatever the console's width."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from clm.cli.tables import Column, elide_middle, print_table

TEXT = st.text(st.sampled_from("abc-_:. 0123456789\n\t日本…"), max_size=120)


def printed(rows: list[dict[str, str]], columns: list[Column], width: int, wide: bool = False) -> list[str]:
    """What print_table prints on a console of `width` columns (no title), line by line."""
    out = io.StringIO()
    print_table(Console(file=out, width=width, color_system=None), rows, columns, wide, None)
    return out.getvalue().splitlines()


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[dict[str, str]], list[Column]]:
    headers = draw(st.lists(st.text("abcdefgh", min_size=1, max_size=10), min_size=1, max_size=7, unique=True))
    columns = [Column(header, note=draw(st.booleans()), keep=draw(st.booleans())) for header in headers]
    rows = draw(st.lists(st.fixed_dictionaries({header: TEXT for header in headers}), max_size=5))
    return rows, columns


@given(tables(), st.integers(80, 200))
def test_every_row_is_one_line_within_the_width_and_notes_follow(table, width):
    rows, columns = table
    lines = printed(rows, columns, width)
    assert all(cell_len(line) <= width for line in lines)
    notes = lines[1 + len(rows) :]
    assert not notes or notes[0].startswith("[1] ")  # not a row's second line
    numbers = [line.split("]")[0] for line in notes if line.startswith("[")]
    assert numbers == [f"[{number}" for number in range(1, len(numbers) + 1)]


def test_free_text_goes_to_notes_only_when_the_row_would_not_fit_and_equal_texts_share_one():
    columns = [Column("instance"), Column("why", note=True)]
    reason = "the stack update changes what the group launches (see the stack's launch changes)"
    rows = [{"instance": f"i-0123456789abcdef{n}", "why": reason} for n in range(2)] + [{"instance": "i-1", "why": ""}]
    assert printed(rows, columns, 80) == [
        "instance             why",
        "i-0123456789abcdef0  [1]",
        "i-0123456789abcdef1  [1]",
        "i-1",
        "[1] the stack update changes what the group launches (see the stack's launch",
        "    changes)",
    ]
    assert printed(rows, columns, 120)[1] == f"i-0123456789abcdef0  {reason}"


def test_the_widest_cells_are_cut_in_the_middle_and_kept_columns_last():
    columns = [Column("cluster"), Column("version", keep=True), Column("state")]
    row = {
        "cluster": "payments-checkout-production-eu-central-1-blue-" * 2,
        "version": "3f9c2a7#Qm9vdGh",
        "state": "ok",
    }
    [_, line] = printed([row], columns, 80)
    assert line == "payments-checkout-productio…roduction-eu-central-1-blue-  3f9c2a7#Qm9vdGh  ok"
    assert cell_len(line) == 80 - len("state") + len("ok")  # the last column is as wide as its header, "ok" shorter
    [_, line] = printed([{**row, "version": "v" * 80}], columns, 80)  # the others cut to their least: then the kept
    assert line.split()[0] == "pay…lue-" and "…" in line.split()[1] and cell_len(line) <= 80


def test_wide_prints_every_value_in_full_beyond_the_console():
    long = "x" * 150
    lines = printed([{"a": long, "b": "y\nz"}], [Column("a", "A", short=str.upper, note=True), Column("b")], 80, True)
    assert lines == [f"a{' ' * 151}b", f"{long}  y z"]


def test_elide_middle():
    assert elide_middle("aws:123456789012:eu-central-1:kube-1", 20) == "aws:12345…l-1:kube-1"
    assert elide_middle("short", 20) == "short"
    assert elide_middle("日本語のテキスト", 9) == "日本…スト"  # 9 cells: 4, "…", 4
