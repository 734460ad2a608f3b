"""Where a rendered document holds decrypted config items, so that a later step can keep them out of its errors.

The render step knows the clear values; the steps after it (the Kubernetes apply) only read the stored rendering,
which keeps the items as ciphertext and must not gain their clear values. So the renderer records, per object,
the JSON Pointers (RFC 6901) of its *sealed* nodes: scalars whose text (or the text they encode in base64) shows a
fragment of a decrypted value, and mappings with such a key. A step that sends the object and gets an error back
scrubs from it every key and scalar under those pointers (:func:`sealed_scrubber`): the object it already holds is
the only place the values come from. Paths, not values, are stored; no step but render can decrypt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from clm.scrub import Scrubber, decoded_layers

_ENCODED = re.compile(r'"([A-Za-z0-9+/_-]{8,}={0,2})"')  # a JSON string that may be base64


def sealed_paths(document: Any, scrubber: Scrubber) -> tuple[str, ...]:
    """The pointers of the nodes of `document` (parsed JSON) that show what `scrubber` scrubs, outermost only."""
    text = json.dumps(document)  # most objects hold no secret: one pass over their text, and their base64 strings
    if not scrubber.touches(text) and not any(map(scrubber.touches, _ENCODED.findall(text))):
        return ()
    return tuple(_sealed(document, "", scrubber))


def _sealed(node: Any, path: str, scrubber: Scrubber) -> Iterator[str]:
    if isinstance(node, dict):
        if any(scrubber.touches(str(key)) for key in node):
            yield path
            return
        for key, value in node.items():
            yield from _sealed(value, f"{path}/{_escape(str(key))}", scrubber)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _sealed(value, f"{path}/{index}", scrubber)
    elif node is not None and scrubber.touches(str(node)):
        yield path


def sealed_scrubber(document: Any, paths: Sequence[str]) -> Scrubber:
    """What scrubs an error about `document` of the keys and scalars under `paths` (and the text they encode)."""
    shown = [text for path in paths for text in _texts(_resolve(document, path))]
    return Scrubber([*shown, *(layer for text in shown for layer in decoded_layers(text))])


def _texts(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from _texts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _texts(value)
    elif node is not None:
        yield str(node)


def _resolve(document: Any, path: str) -> Any:
    """The node at `path`; the whole document when the path no longer leads anywhere (scrub more, never less)."""
    node = document
    for part in path.split("/")[1:] if path else []:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return document
    return node


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
