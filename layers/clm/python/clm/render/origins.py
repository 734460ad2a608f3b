"""Registry values as text that remembers where it came from, so that the renderer can tell data from syntax.

`RegistryStr` is a `str` with an `origin` ("config item vpc_cidr (from the registry)"). `registry_view` gives the
templates a copy of the cluster whose registry strings are RegistryStr. Text derived from one (concatenation with
`~` or `+`, slicing, `%`, method calls, CLM's functions and Jinja's filters: see `propagating`) is a RegistryStr
too, with origin "a value derived from ...". Encoders (`yaml`, `json`, `tojson`, `base64`, `sha256`, `urlencode`)
turn it back into plain text: their output is data wherever it is spliced.

Text that only holds letters, digits, `_ . / = + @ -` and inner colons (`INERT`) is left plain: it is data
wherever it lands, and so is anything made of it and template text alone. A decoder's output (`base64_decode`)
is followed whatever its input. Not followed: iterating over a value's characters, and values the templates
compute without going through these (e.g. a Python-side property of the model).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from clm.model import Cluster, NodePool

DERIVED = "a value derived from "
DECRYPTED = ", decrypted)"  # ends the origin of a decrypted config item, and of any value derived from one
# Text that is data in any YAML context: no indicator first, a colon only before another such character (aws:1:eu-1).
INERT = re.compile(r"[A-Za-z0-9_/+](?:[A-Za-z0-9_./=+@-]|:(?=[A-Za-z0-9_/+]))*")
# Cluster fields that are registry text (the rest are numbers, or status CLM writes itself).
CLUSTER_TEXT = (
    "id",
    "local_id",
    "alias",
    "api_server_url",
    "environment",
    "infrastructure_account",
    "region",
    "provider",
    "lifecycle_status",
    "channel",
    "owner",
    "account_name",
    "created_at",
)
POOL_TEXT = ("name", "profile", "discount_strategy")


class RegistryStr(str):
    """Text from the registry (or derived from it); `origin` says which field."""

    origin: str

    def __new__(cls, value: str, origin: str) -> RegistryStr:
        text = super().__new__(cls, value)
        text.origin = origin
        return text

    def __add__(self, other: Any) -> Any:
        return retaint(str.__add__(self, other), self.origin)

    def __radd__(self, other: Any) -> Any:
        return retaint(str.__add__(other, self), self.origin) if isinstance(other, str) else NotImplemented

    def __mod__(self, other: Any) -> Any:
        return retaint(str.__mod__(self, other), self.origin)

    def __mul__(self, other: Any) -> Any:
        return retaint(str.__mul__(self, other), self.origin)

    def __getitem__(self, key: Any) -> Any:
        return retaint(str.__getitem__(self, key), self.origin)


def is_decrypted(origin: str) -> bool:
    """Whether text of `origin` is (or derives from) a decrypted config item: its value must never be shown."""
    return origin.endswith(DECRYPTED)


def derived(origin: str) -> str:
    """The origin of text computed from a value of `origin`."""
    return origin if origin.startswith(DERIVED) else DERIVED + origin


def retaint(result: Any, origin: str) -> Any:
    """`result` (text, or a list of text) as RegistryStr derived from `origin`; anything else as it is.

    Inert text (see `INERT`) stays plain: it is data wherever it lands, and so is text made of it and template text.
    """
    if isinstance(result, str):
        if type(result) is RegistryStr or INERT.fullmatch(result):
            return result
        return RegistryStr(result, derived(origin))
    if type(result) is list:
        return [retaint(item, origin) for item in result]
    return result


def origin_in(values: Any) -> str | None:
    """The origin of the first RegistryStr among `values` (or directly inside a list, tuple or dict of them)."""
    for value in values:
        kind = type(value)
        if kind is RegistryStr:
            return value.origin
        if kind is list or kind is tuple or kind is dict:
            inner = origin_in(value.values() if kind is dict else value)
            if inner is not None:
                return inner
    return None


def propagating(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` whose text results derive from its registry arguments (Jinja's pass_context marks kept)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for arg in args:
            if isinstance(arg, Iterator):  # a generator (map, select) is read once: read them all here
                args = tuple(list(arg) if isinstance(arg, Iterator) else arg for arg in args)
                break
        result = function(*args, **kwargs)
        kind = type(result)
        if kind is not str and kind is not list:
            return result
        origin = origin_in(args) or origin_in(kwargs.values())
        return result if origin is None else retaint(result, origin)

    return wrapper


def marked(value: str, origin: str) -> str:
    """`value` as RegistryStr, unless it is inert (then it is data wherever it lands: no need to follow it)."""
    return value if INERT.fullmatch(value) else RegistryStr(value, origin)


def decoding(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (a decoder: its output can be any text) whose text output is checked wherever it is spliced."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return retaint(function(*args, **kwargs), f"text decoded by {function.__name__}")

    return wrapper


def _items(items: Mapping[str, str], origin: Callable[[str], str]) -> dict[str, str]:
    return {marked(key, f"the name of {origin(key)}"): marked(value, origin(key)) for key, value in items.items()}


def _pool(index: int, pool: NodePool) -> NodePool:
    where = f"node_pools[{index}] ({pool.name!r})"
    fields = {name: marked(getattr(pool, name), f"{where}: {name}") for name in POOL_TEXT}
    return dataclasses.replace(
        pool,
        **fields,
        instance_types=[
            marked(kind, f"{where}: instance_types[{number}]") for number, kind in enumerate(pool.instance_types)
        ],
        config_items=_items(pool.config_items, lambda key: f"{where}: config item {key}"),
    )


def registry_view(
    cluster: Cluster, registry_items: Mapping[str, str] | None = None, decrypted: Collection[str] = ()
) -> Cluster:
    """A copy of `cluster` for templates, its registry text as RegistryStr (inert text stays plain).

    Config items not in `registry_items` (default: all of them are) came from config-defaults.yaml; they are
    marked as such, and checked all the same: the registry may set any of them. Those named in `decrypted` were
    `aws:kms:` ciphertext: their origin says so (`is_decrypted`).
    """
    registry_items = cluster.config_items if registry_items is None else registry_items

    def item_origin(key: str) -> str:
        source = "the registry" if key in registry_items else "config-defaults.yaml"
        return f"config item {key} (from {source}{DECRYPTED if key in decrypted else ')'}"

    text = {
        name: marked(value, f"registry field {name}")
        for name in CLUSTER_TEXT
        if isinstance(value := getattr(cluster, name), str)
    }
    return dataclasses.replace(
        cluster,
        **text,
        config_items=_items(cluster.config_items, item_origin),
        node_pools=[_pool(index, pool) for index, pool in enumerate(cluster.node_pools)],
    )
