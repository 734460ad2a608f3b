"""Template functions: Zalando CLM's (provisioner/template.go, jwks.go) under snake_case names, and the helpers of
templates that `clm migrate` translated."""

from __future__ import annotations

import base64 as _b64
import binascii
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from clm.render.go_functions import GO_FUNCTIONS
from clm.render.jwks import generate_jwks_document, generate_oidc_discovery_document
from clm.render.networks import (
    extract_endpoint_hosts,
    node_cidr_max_nodes,
    node_cidr_max_nodes_pod_cidr,
    node_cidr_max_pods,
    nth_address_from_cidr,
    port_ranges,
    sg_ingress_ranges,
    split_host_port,
    stups_nat_subnets,
)
from clm.render.pem import certificate_expiry, public_key
from clm.render.pool_groups import node_life_cycle_provider_per_node_pool_group, zone_distributed_node_pool_groups
from clm.render.quantities import kubernetes_size_to_kilo_bytes, scale_quantity, sum_quantities

ALL_AZS = "*"


def base64(value: str) -> str:
    """Standard base64 of a string's UTF-8 bytes."""
    return _b64.b64encode(str(value).encode()).decode()


def base64_decode(value: str) -> str:
    """Decode standard base64 into a UTF-8 string."""
    try:
        return _b64.b64decode(str(value), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"base64_decode: not valid base64 text: {exc}") from None


def sha256(value: str) -> str:
    """Hex SHA-256 of a string."""
    return hashlib.sha256(str(value).encode()).hexdigest()


def account_id(infrastructure_account: str) -> str:
    """`aws:123456789012` -> `123456789012`."""
    _, sep, ident = str(infrastructure_account).partition(":")
    if not sep or not ident:
        raise ValueError(f"account_id: expected type:id, got {infrastructure_account!r}")
    return ident


def az_id(az_name: str) -> str:
    """Last part of an availability zone name: `eu-central-1c` -> `1c`."""
    return str(az_name).rsplit("-", 1)[-1]


def az_count(zones: Mapping[str, Any] | Iterable[str]) -> int:
    """Number of availability zones in a subnet map or list, not counting the `*` entry."""
    return sum(1 for zone in zones if zone != ALL_AZS)


def split(value: str, separator: str = ",") -> list[str]:
    """Split a string; an empty string gives an empty list (as CLM's split)."""
    return str(value).split(separator) if value != "" else []


def join(separator: str, items: Iterable[Any]) -> str:
    """Join items with a separator (sprig's argument order: separator first)."""
    return str(separator).join(str(item) for item in items)


def indent(spaces: int, text: str) -> str:
    """Indent every line of text by `spaces` spaces (sprig's indent)."""
    pad = " " * int(spaces)
    return "\n".join(pad + line for line in str(text).split("\n"))


def parse_int(value: str) -> int:
    """Parse an integer config item."""
    return int(str(value).strip())


def asg_size(pool_size: int, groups: int) -> int:
    """A pool's size split evenly over its auto scaling groups (one per zone); fails unless it divides exactly."""
    if not groups or pool_size % groups:
        raise ValueError(f"pool size must be an exact multiple of {groups}")
    return pool_size // groups


def mount_unit_name(path: str) -> str:
    """CLM's mountUnitName: an absolute path's `/` as `-`, without the first (`/foo/bar` -> `foo-bar`)."""
    if not str(path).startswith("/"):
        raise ValueError(f"not an absolute path: {path}")
    return str(path)[1:].replace("/", "-")


def has_prefix(text: str, prefix: str) -> bool:
    """strings.HasPrefix (CLM's hasPrefix)."""
    return str(text).startswith(str(prefix))


def has_suffix(text: str, suffix: str) -> bool:
    """strings.HasSuffix (CLM's hasSuffix)."""
    return str(text).endswith(str(suffix))


def append(items: list[str], item: str, *more: str) -> list[str]:
    """CLM's `append` (strAppend): a new list of the strings of `items` and then the items given."""
    if not isinstance(items, list | tuple):
        raise ValueError(f"append: the first argument must be a list of strings, got {type(items).__name__}")
    return [*items, item, *more]


def indexed_list(item_template: str, length: int) -> str:
    """CLM's indexedList: `length` copies of the template, `$` replaced by 0, 1, ..., joined by `,`."""
    if isinstance(length, bool) or not isinstance(length, int):
        raise ValueError(f"indexedList: the length must be an integer, got {length!r}")
    if length < 0:
        raise ValueError(f"expecting non-negative integer, got: {length}")
    return ",".join(str(item_template).replace("$", str(i)) for i in range(length))


def aws_valid_id(ident: str) -> str:
    """A cluster ID with `:` as `__`, as AWS names allow (`aws__123__eu-central-1__kube-1`)."""
    return str(ident).replace(":", "__")


# Registered both as globals (`{{ sha256(x) }}`) and as filters (`{{ x | sha256 }}`).
FUNCTIONS = {
    "base64": base64,
    "base64_decode": base64_decode,
    "sha256": sha256,
    "account_id": account_id,
    "az_id": az_id,
    "az_count": az_count,
    "split": split,
    "parse_int": parse_int,
    "asg_size": asg_size,
    "aws_valid_id": aws_valid_id,
    "mount_unit_name": mount_unit_name,
    "has_prefix": has_prefix,
    "has_suffix": has_suffix,
    "append": append,
    "indexed_list": indexed_list,
    "port_ranges": port_ranges,
    "split_host_port": split_host_port,
    "nth_address_from_cidr": nth_address_from_cidr,
    "kubernetes_size_to_kilo_bytes": kubernetes_size_to_kilo_bytes,
    "generate_jwks_document": generate_jwks_document,
    "generate_oidc_discovery_document": generate_oidc_discovery_document,
    "certificate_expiry": certificate_expiry,
    "extract_endpoint_hosts": extract_endpoint_hosts,
    "node_cidr_max_nodes": node_cidr_max_nodes,
    "node_cidr_max_nodes_pod_cidr": node_cidr_max_nodes_pod_cidr,
    "node_cidr_max_pods": node_cidr_max_pods,
    "node_life_cycle_provider_per_node_pool_group": node_life_cycle_provider_per_node_pool_group,
    "public_key": public_key,
    "scale_quantity": scale_quantity,
    "sg_ingress_ranges": sg_ingress_ranges,
    "stups_nat_subnets": stups_nat_subnets,
    "sum_quantities": sum_quantities,
    "zone_distributed_node_pool_groups": zone_distributed_node_pool_groups,
    **GO_FUNCTIONS,  # Go semantics for templates translated by `clm migrate`
}
# Globals only: their sprig argument order differs from Jinja's builtin filters of the same name.
GLOBALS_ONLY = {"join": join, "indent": indent}
