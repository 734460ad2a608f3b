"""Hypothesis strategies that damage text as hands and bad merges do: snippets inserted, raw bytes, slices cut out."""

from __future__ import annotations

from hypothesis import strategies as st

# YAML syntax, tags, anchors, complex keys, control characters, encodings, values YAML reads as non-strings.
# fmt: off
YAML_DAMAGE = [
    ":", ": ", "- ", "-", "\t", "\n", "  ", "{", "}", "[", "]", ",", "&a ", "*a", "*nope", "<<: *a\n",
    "!!binary ", "!!set ", "!!timestamp ", "!!python/object/apply:os.system ['true'] ", "!Ref ", "!GetAtt ",
    "? [a, b]\n: c\n", "? {a: 1}\n: c\n", "{a: 1}: b\n", '"', "'", "|", ">", "%YAML 1.1\n", "---\n", "...\n",
    "#", "@", "`", "\x00", "\ufeff", "\x85", "é", "中", "😀", "null", "~", "1e400", ".nan", "0x1F",
    "day: 2024-01-01\n", "1: one\n",
]
# fmt: on


@st.composite
def damaged(draw: st.DrawFn, data: bytes, snippets: st.SearchStrategy[bytes]) -> bytes:
    """`data` with one to three snippets (or raw bytes) inserted anywhere, and maybe a slice cut out."""
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(snippets | st.binary(min_size=1, max_size=3)) + data[at:]
    if draw(st.booleans()):
        start = draw(st.integers(0, len(data)))
        data = data[:start] + data[start + draw(st.integers(0, 60)) :]
    return data
