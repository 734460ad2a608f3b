"""Keeping decrypted config items out of error messages, whole or in part (docs/encrypted-config-items.md).

A message may show a secret as it is, truncated, escaped (Python, JSON, YAML, Go quoting, URL encoding), encoded in
base64 at any offset, or wrapped over lines. :class:`Scrubber` compares *skeletons*: the text without whitespace,
quotes and backslashes, so that escaping and wrapping leave a fragment's skeleton intact. Every run of a message
made of fragments of a secret's shown forms, each at least `MIN_FRAGMENT` skeleton characters long (the whole
secret when it is shorter), becomes `PLACEHOLDER`. The price: text sharing `MIN_FRAGMENT` characters with a secret
is scrubbed too.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import urllib.parse
from collections.abc import Iterable, Iterator

import yaml

PLACEHOLDER = "<decrypted config item>"
MIN_FRAGMENT = 6  # skeleton characters; shorter fragments are too common to tell from other text
DECODE_DEPTH = 2  # base64 inside base64 (a Secret's .dockerconfigjson holds base64 of user:password)
# Whitespace, quotes, backslashes and the escapes of line breaks and tabs: what quoting, escaping and wrapping add.
_DROPPED = re.compile(r"\\[ntr]|[\s\\\"'`]")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?|[A-Za-z0-9_-]+={0,2}")


def skeleton(text: str) -> str:
    """`text` without whitespace, quotes, backslashes and `\\n`, `\\t`, `\\r`: what escaping and line wrapping leave
    of it."""
    return _DROPPED.sub("", text)


def shown_forms(value: str) -> list[str]:
    """How `value` may appear in a message: as it is, escaped or quoted as Python, JSON, YAML and Go show text,
    URL-encoded, and the base64 characters that encode it whatever its offset in the encoded text."""
    forms = {
        value,
        repr(value),
        json.dumps(value),
        json.dumps(value, ensure_ascii=False),
        _html_safe(json.dumps(value)),
        yaml.safe_dump(value, default_style='"', width=80),
        urllib.parse.quote(value, safe=""),
    }
    data = value.encode()
    for offset in range(3):  # which of the three positions in a base64 quantum the value starts at
        encoded = base64.b64encode(bytes(offset) + data).decode()
        inner = encoded[-(-8 * offset // 6) : (8 * (offset + len(data))) // 6]
        forms |= {inner, inner.replace("+", "-").replace("/", "_")}
    return [form for form in forms if form]


def _html_safe(text: str) -> str:
    """JSON as Jinja's `tojson` escapes it for HTML."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027")


def decoded_layers(value: str) -> Iterator[str]:
    """The text that `value` encodes in base64 (standard or URL-safe), and what that encodes, `DECODE_DEPTH` deep."""
    for _ in range(DECODE_DEPTH):
        compact = "".join(value.split())
        if len(compact) < 8 or not _BASE64.fullmatch(compact):
            return
        padded = compact.rstrip("=") + "=" * (-len(compact.rstrip("=")) % 4)
        alphabet = b"-_" if "-" in compact or "_" in compact else None
        try:
            value = base64.b64decode(padded, altchars=alphabet, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return
        yield value


class Scrubber:
    """Replaces what a message shows of `secrets` (see the module's docstring) by `PLACEHOLDER`."""

    def __init__(self, secrets: Iterable[str]):
        self._grams: dict[int, set[str]] = {}
        for secret in secrets:
            for form in shown_forms(secret):
                shape = skeleton(form)
                size = min(MIN_FRAGMENT, len(shape))
                if size:
                    grams = self._grams.setdefault(size, set())
                    grams.update(shape[start : start + size] for start in range(len(shape) - size + 1))
        self._least = min(self._grams, default=0)

    def __bool__(self) -> bool:
        return bool(self._grams)

    def touches(self, text: str) -> bool:
        """Whether `text`, or text it encodes in base64, shows a fragment of a secret."""
        if len(text) < self._least:  # too short for any fragment, and so is what it encodes
            return False
        return self._shows(skeleton(text)) or any(self._shows(skeleton(layer)) for layer in decoded_layers(text))

    def __call__(self, text: str) -> str:
        """`text` with every run of fragments of a secret (and whatever is dropped between them) replaced."""
        if not self._grams:
            return text
        dropped = bytearray(len(text))
        for match in _DROPPED.finditer(text):
            dropped[match.start() : match.end()] = b"\x01" * (match.end() - match.start())
        kept = [index for index, flag in enumerate(dropped) if not flag]
        shape = "".join(text[index] for index in kept)
        covered = bytearray(len(shape))
        for size, grams in self._grams.items():
            for start in range(len(shape) - size + 1):
                if shape[start : start + size] in grams:
                    covered[start : start + size] = b"\x01" * size
        parts, position, start = [], 0, None
        for index, flag in enumerate([*covered, 0]):
            if flag and start is None:
                start = index
            elif not flag and start is not None:
                parts += [text[position : kept[start]], PLACEHOLDER]
                position, start = kept[index - 1] + 1, None
        return "".join([*parts, text[position:]])

    def _shows(self, shape: str) -> bool:
        """Whether `shape` (a skeleton) holds a fragment: its windows are cut and looked up in C (map, isdisjoint),
        rendered objects being megabytes."""
        length = len(shape)
        for size, grams in self._grams.items():
            windows = map(shape.__getitem__, map(slice, range(length - size + 1), range(size, length + 1)))
            if not grams.isdisjoint(windows):
                return True
        return False
