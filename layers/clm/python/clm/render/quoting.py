"""The `yaml` and `json` filters: a value as a literal that YAML and JSON read as that same value, wherever it is
spliced (`InstanceType: {{ node_pool.instance_types[0] | yaml }}` gives `InstanceType: "m5.large"`).

The literal is JSON (YAML's flow syntax): a string is double-quoted with escapes, numbers, booleans and null are
themselves, lists and mappings are flow collections. Characters YAML reads as line breaks or refuses raw are
escaped too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from clm.render.origins import INERT
from clm.render.splices import strip_marks

_ESCAPED = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]")


def _plain(value: Any) -> Any:
    if isinstance(value, str):
        return str(strip_marks(value))
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):  # a value the renderer could not compute raises its reason here
        return {_plain(key): _plain(item) for key, item in value.items()}
    return value


def literal(value: Any) -> str:
    """`value` as a JSON literal, which is also a YAML flow scalar or collection."""
    if isinstance(value, str) and INERT.fullmatch(value):  # the common case, quoted as it is
        return f'"{value}"'
    text = json.dumps(_plain(value), ensure_ascii=False)
    return _ESCAPED.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


QUOTING_FILTERS = {"yaml": literal, "json": literal}
