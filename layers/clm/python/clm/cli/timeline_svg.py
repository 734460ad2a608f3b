"""A timeline picture as a self-contained HTML page: labelled rows of coloured bars on one time axis (inline SVG and
CSS, no script, no external asset). Pure: rows in, text out; every caller-supplied string is escaped.

Drawn by `clm rollout status --html` (clm.cli.rollout_picture) and by the demo's node roll timeline.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

PLOT_WIDTH, ROW_HEIGHT, BAR_HEIGHT, TOP, BOTTOM = 710, 26, 18, 40, 30
MIN_LABEL_WIDTH, CHAR_WIDTH = 190, 7  # a label's width at font-size 12, roughly, for a monospace-ish estimate


@dataclass(frozen=True)
class Bar:
    """A span of a row, from `start` to `end` (seconds on the axis), with its colour and tooltip ("" for none);
    a `thin` bar is a band in the middle of the row (drawn over the others)."""

    start: float
    end: float
    colour: str
    tip: str = ""
    thin: bool = False


@dataclass(frozen=True)
class Row:
    """A row: its label and bars; a `heading` row's label is bold (a group, e.g. a wave)."""

    label: str
    bars: tuple[Bar, ...] = ()
    heading: bool = False


@dataclass(frozen=True)
class Mark:
    """A vertical line across the rows at `at` seconds (e.g. when a rollout halted), with its tooltip."""

    at: float
    colour: str
    tip: str


def timeline_svg(
    rows: Sequence[Row], end: float, ticks: Sequence[tuple[float, str]], marks: Sequence[Mark] = ()
) -> str:
    """An SVG of `rows` on an axis from 0 to `end` seconds, with grid lines and labels at `ticks` and `marks`."""
    longest = max((len(row.label) for row in rows), default=0)
    label_width = max(MIN_LABEL_WIDTH, CHAR_WIDTH * longest + 15)
    width = label_width + PLOT_WIDTH
    scale = (PLOT_WIDTH - 20) / max(end, 1.0)
    height = TOP + ROW_HEIGHT * len(rows) + BOTTOM
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">']
    for second, label in ticks:
        x = label_width + second * scale
        parts.append(f'<line x1="{x:.1f}" y1="30" x2="{x:.1f}" y2="{height - 25}" stroke="#ddd"/>')
        parts.append(f'<text x="{x:.1f}" y="{height - 10}" font-size="11" text-anchor="middle">{_text(label)}</text>')
    for index, row in enumerate(rows):
        y = TOP + index * ROW_HEIGHT
        weight = ' font-weight="bold"' if row.heading else ""
        parts.append(f'<text x="5" y="{y + 14}" font-size="12"{weight}>{_text(row.label)}</text>')
        for bar in sorted(row.bars, key=lambda bar: bar.thin):
            x, w = label_width + bar.start * scale, max((bar.end - bar.start) * scale, 2.0)
            top, tall = (y + 6, 6) if bar.thin else (y, BAR_HEIGHT)
            tip = f"<title>{_text(bar.tip)}</title>" if bar.tip else ""
            colour = _text(bar.colour)
            parts.append(f'<rect x="{x:.1f}" y="{top}" width="{w:.1f}" height="{tall}" fill="{colour}">{tip}</rect>')
    for mark in marks:
        x = label_width + mark.at * scale
        parts.append(
            f'<line x1="{x:.1f}" y1="{TOP - 8}" x2="{x:.1f}" y2="{height - BOTTOM}" stroke="{_text(mark.colour)}" '
            f'stroke-width="3"><title>{_text(mark.tip)}</title></line>'
        )
    parts.append("</svg>")
    return "".join(parts)


def timeline_page(title: str, legend: Sequence[tuple[str, str]], body: str) -> str:
    """A page with `title`, a legend of (name, colour) and `body` (SVGs and notes, already HTML)."""
    spans = " ".join(
        f'<span style="background:{_text(colour)};padding:2px 8px;color:white">{_text(name)}</span>'
        for name, colour in legend
    )
    return (
        f"<!doctype html><meta charset='utf-8'><title>{_text(title)}</title>"
        f"<h2 style='font-family:sans-serif'>{_text(title)}</h2><p style='font-family:sans-serif'>{spans}</p>{body}"
    )


def note(text: str, colour: str = "black", bold: bool = False) -> str:
    """A paragraph of `text` for a page's body."""
    weight = ";font-weight:bold" if bold else ""
    return f"<p style='font-family:sans-serif;color:{_text(colour)}{weight}'>{_text(text)}</p>"


def _text(value: str) -> str:
    """`value` as HTML text or attribute value (quotes escaped too)."""
    return html.escape(value, quote=True)
