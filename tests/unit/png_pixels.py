"""Pixels of a PNG (8-bit RGB or RGBA, not interlaced: what Chromium's screenshots are), read with the standard
library only (zlib), for tests that look at what a browser drew."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}  # colour type -> bytes per pixel at 8 bits


class Image:
    """Decoded pixels: `width`, `height`, and `pixel(x, y)` as an (r, g, b) tuple."""

    def __init__(self, width: int, height: int, channels: int, rows: list[bytes]):
        self.width, self.height, self._channels, self._rows = width, height, channels, rows

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        """The colour at column `x`, row `y` (alpha dropped)."""
        start = x * self._channels
        r, g, b = self._rows[y][start : start + 3]
        return r, g, b


def read_png(path: Path) -> Image:
    """Decode `path`; ValueError for a PNG of another kind."""
    data = path.read_bytes()
    if not data.startswith(SIGNATURE):
        raise ValueError(f"{path}: not a PNG")
    offset, header, compressed = len(SIGNATURE), b"", b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        offset += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            compressed += body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour not in CHANNELS or interlace:
        raise ValueError(f"{path}: depth {depth}, colour type {colour}, interlace {interlace}: not read here")
    channels = CHANNELS[colour]
    raw, stride = zlib.decompress(compressed), width * channels
    rows, previous = [], bytes(stride)
    for y in range(height):
        line = raw[y * (stride + 1) : (y + 1) * (stride + 1)]
        previous = _unfilter(line[0], bytearray(line[1:]), previous, channels)
        rows.append(previous)
    return Image(width, height, channels, rows)


def _unfilter(kind: int, line: bytearray, above: bytes, bpp: int) -> bytes:
    """A scanline with its filter undone (PNG specification, 9.2)."""
    if kind == 0:
        return bytes(line)
    if kind == 2:
        return bytes((a + b) & 255 for a, b in zip(line, above, strict=True))
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up, corner = above[i], above[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 255
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 255
        elif kind == 4:
            line[i] = (line[i] + _paeth(left, up, corner)) & 255
    return bytes(line)


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c
