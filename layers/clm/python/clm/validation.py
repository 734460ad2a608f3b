"""Validation of registry data, collecting every problem with its field path and line."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from clm.errors import ValidationError
from clm.model import (
    ACCOUNT_RE,
    CLUSTER_ID_RE,
    DISCOUNT_STRATEGIES,
    KARPENTER_PROFILE,
    LIFECYCLE_STATUSES,
    LOCAL_ID_RE,
    POOL_NAME_RE,
    PROVIDERS,
    REGION_RE,
    SLUG_RE,
    URL_RE,
    Cluster,
    ClusterStatus,
    NodePool,
)
from clm.yamlutil import LineList, scalar_text

CLUSTER_FIELDS = {
    "id",
    "alias",
    "local_id",
    "api_server_url",
    "channel",
    "config_items",
    "criticality_level",
    "environment",
    "infrastructure_account",
    "region",
    "provider",
    "lifecycle_status",
    "owner",
    "account_name",
    "created_at",
    "node_pools",
    "status",
}
CLUSTER_REQUIRED = ("id", "local_id", "infrastructure_account", "region", "provider")
POOL_FIELDS = {
    "name",
    "profile",
    "min_size",
    "max_size",
    "instance_types",
    "instance_type",
    "discount_strategy",
    "config_items",
}
POOL_REQUIRED = ("name", "profile", "min_size", "max_size")
POOL_REQUIRED_KARPENTER = ("name", "profile")
# Zalando CLM's types (and so the spec hash's encoding): criticality_level is an int32, pool sizes int64.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# What a config item may be written as in YAML or DynamoDB; stored as its text (see `scalar_text`).
CONFIG_ITEM_SCALARS = (str, int, float, date, datetime)
# Never legitimate in registry text: control characters, Unicode line/paragraph separators and noncharacters (the
# renderer's markers). Config item values may hold tabs and line breaks (a PEM certificate); other fields may not.
NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufdd0-\ufdef\ufffe\uffff]")
NOT_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufdd0-\ufdef\ufffe\uffff]")
# AWS instance type names: m5.large, u-6tb1.metal, mac2-m2pro.metal.
# The Cluster Registry's alias pattern (pkg/cluster-registry/models/cluster.go), within EKS's 100 characters.
EKS_ALIAS_RE = re.compile(r"[a-z][a-z0-9-]{0,98}[a-z0-9]")
EKS_NAME_ITEM = "eks_cluster_name"  # clm.kube.connect.EKS_NAME_ITEM
INSTANCE_TYPE_RE = re.compile(r"[a-z0-9][a-z0-9.-]{0,63}")


def _bad_character(value: str, pattern: re.Pattern[str]) -> str | None:
    found = pattern.search(value)
    return f"contains {found.group()!r} (control or reserved character)" if found else None


class _Checker:
    """Collects problems as `path (line N): message`."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def fail(self, path: str, message: str, container: Any = None, key: str | None = None) -> None:
        line = _line(container, key)
        self.problems.append(f"{path}{f' (line {line})' if line else ''}: {message}")

    def string(
        self, data: dict, key: str, path: str, pattern: Any = None, hint: str = "", default: str | None = ""
    ) -> str | None:
        value = data.get(key, default)
        if value is None:
            if default is None:  # an optional field left empty
                return None
            value = ""  # `key:` with no value reads as the empty string, as in CLM
        if isinstance(value, bool) or not isinstance(value, str | int | float | date):
            self.fail(path, f"must be a string, got {type(value).__name__}", data, key)
            return default
        # YAML timestamps (e.g. created_at) as ISO 8601 text; datetime is a date
        value = value.isoformat() if isinstance(value, date) else str(value)
        if pattern is not None and not pattern.fullmatch(value):
            self.fail(path, f"{value!r} is not valid{f' ({hint})' if hint else ''}", data, key)
        elif problem := _bad_character(value, NOT_LINE):
            self.fail(path, problem, data, key)
        return value

    def integer(self, data: dict, key: str, path: str, maximum: int, default: int = 0, minimum: int = 0) -> int:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be an integer, got {value!r}", data, key)
            return default
        if value < minimum:
            self.fail(path, f"must be >= {minimum}, got {value}", data, key)
        if value > maximum:
            self.fail(path, f"must be <= {maximum}, got {value}", data, key)
        return value

    def one_of(self, data: dict, key: str, path: str, choices: tuple[str, ...], default: str) -> str:
        value = data.get(key, default)
        if value not in choices:
            self.fail(path, f"{value!r} is not one of {', '.join(choices)}", data, key)
            return default
        return value

    def mapping(
        self, data: Any, path: str, allowed: set[str], required: tuple[str, ...], parent: Any = None, key: Any = None
    ) -> bool:
        if not isinstance(data, dict):
            self.fail(path, f"must be a mapping, got {type(data).__name__}", parent, key)
            return False
        for name in sorted(set(map(str, data)) - allowed):
            self.fail(f"{path}.{name}" if path else name, "unknown field", data, name)
        for name in required:
            if name not in data:
                self.fail(f"{path}.{name}" if path else name, "is required", data)
        return True

    def config_items(self, data: dict, path: str) -> dict[str, str]:
        items = data.get("config_items") or {}
        if not isinstance(items, dict):
            self.fail(path, "must be a mapping of strings", data, "config_items")
            return {}
        result = {}
        for key, value in items.items():
            if key in ("", None):
                self.fail(path, "config item names must not be empty", items)
                continue
            if not isinstance(value, CONFIG_ITEM_SCALARS):  # bool is an int
                self.fail(f"{path}.{key}", "must be a string", items, key)
                continue
            text = scalar_text(value)
            problem = _bad_character(str(key), NOT_LINE) or _bad_character(text, NOT_TEXT)
            if problem:
                self.fail(f"{path}.{key!r}", problem, items, key)
                continue
            result[str(key)] = text
        return result


def _line(container: Any, key: Any) -> int | None:
    if container is None:
        return None
    if key is not None and hasattr(container, "key_lines"):
        return container.line_of(str(key))
    if isinstance(key, int) and hasattr(container, "item_lines") and key < len(container.item_lines):
        return container.item_lines[key]
    return getattr(container, "line", None) or None


def _parse_pool(check: _Checker, data: Any, path: str, parent: Any, index: int) -> NodePool | None:
    karpenter = isinstance(data, dict) and data.get("profile") == KARPENTER_PROFILE
    # Karpenter pools have no auto scaling group: CLM reads their sizes as 0 when absent and uses neither.
    required = POOL_REQUIRED_KARPENTER if karpenter else POOL_REQUIRED
    if not check.mapping(data, path, POOL_FIELDS, required, parent, index):
        return None
    name = check.string(data, "name", f"{path}.name", POOL_NAME_RE, "lowercase letters, digits, -")
    profile = check.string(data, "profile", f"{path}.profile", SLUG_RE, "a profile folder name")
    min_size = check.integer(data, "min_size", f"{path}.min_size", INT64_MAX)
    max_size = check.integer(data, "max_size", f"{path}.max_size", INT64_MAX)
    if min_size > max_size:
        check.fail(f"{path}.min_size", f"must be <= max_size ({min_size} > {max_size})", data, "min_size")
    legacy = "instance_type" in data and "instance_types" not in data
    if "instance_type" in data and "instance_types" in data:
        check.fail(path, "give instance_types or instance_type, not both", data, "instance_type")
    return NodePool(
        name=name or "",
        profile=profile or "",
        min_size=min_size,
        max_size=max_size,
        instance_types=_instance_types(check, data, path, legacy, karpenter),
        legacy_instance_type=legacy,
        discount_strategy=check.one_of(
            data, "discount_strategy", f"{path}.discount_strategy", DISCOUNT_STRATEGIES, "none"
        ),
        config_items=check.config_items(data, f"{path}.config_items"),
    )


def _instance_types(check: _Checker, data: dict, path: str, legacy: bool, karpenter: bool) -> list[str]:
    """The pool's instance types; a Karpenter pool may have none (its NodePool's requirements choose)."""
    key = "instance_type" if legacy else "instance_types"
    raw_types = [data["instance_type"]] if legacy else data.get("instance_types")
    if karpenter and raw_types in (None, []):
        return []
    if not isinstance(raw_types, list) or not raw_types or not all(isinstance(t, str) and t for t in raw_types):
        what = "a list of instance type names" if karpenter else "a non-empty list of instance type names"
        check.fail(f"{path}.instance_types", f"must be {what}", data, key)
        return ["invalid"]
    for number, kind in enumerate(raw_types):
        if not INSTANCE_TYPE_RE.fullmatch(kind):
            where = (raw_types, number) if isinstance(raw_types, LineList) else (data, key)  # the item's line
            check.fail(f"{path}.instance_types[{number}]", f"{kind!r} is not an instance type name", *where)
    return list(raw_types)


def _parse_pools(check: _Checker, data: dict) -> list[NodePool]:
    pools_data = data.get("node_pools") or []
    if not isinstance(pools_data, list):
        check.fail("node_pools", "must be a list", data, "node_pools")
        return []
    pools = [_parse_pool(check, item, f"node_pools[{i}]", pools_data, i) for i, item in enumerate(pools_data)]
    seen: set[str] = set()
    for i, pool in enumerate(pools):
        if pool is not None and pool.name in seen:
            check.fail(f"node_pools[{i}].name", f"duplicate node pool name {pool.name!r}", pools_data, i)
        if pool is not None:
            seen.add(pool.name)
    return [pool for pool in pools if pool is not None]


def _parse_status(check: _Checker, data: dict) -> ClusterStatus:
    status = data.get("status")
    if status is not None and not isinstance(status, dict):
        check.fail("status", "must be a mapping", data, "status")
        return ClusterStatus()
    problems = (status or {}).get("problems") or []
    if not isinstance(problems, list) or not all(isinstance(p, dict) for p in problems):
        check.fail("status.problems", "must be a list of mappings", status, "problems")
        return ClusterStatus()
    try:
        return ClusterStatus.from_dict(status)
    except (TypeError, ValueError, OverflowError) as exc:
        check.fail("status", f"invalid: {exc}", data, "status")
        return ClusterStatus()


def _provider(check: _Checker, data: dict) -> str:
    """The cluster's provider: one that CLM provisions (PROVIDERS)."""
    value = check.string(data, "provider", "provider", SLUG_RE, "e.g. zalando-aws")
    if value and value not in PROVIDERS:
        supported = " and ".join(PROVIDERS)
        check.fail(
            "provider", f"{value!r} is not provisioned by CLM (it provisions {supported} clusters)", data, "provider"
        )
    return value


def _check_eks(check: _Checker, data: dict, cluster: Cluster) -> None:
    """A zalando-eks cluster's alias names its EKS cluster and tags its resources (CLM's api/cluster.go Name()): it
    must be an EKS cluster name in the Cluster Registry's alias pattern (no `*`, `/`, `:` to reach another's tags,
    never empty), and no `eks_cluster_name` item may name another."""
    if not cluster.is_eks:
        return
    if not EKS_ALIAS_RE.fullmatch(cluster.alias):
        check.fail(
            "alias",
            f"{cluster.alias!r} cannot name a zalando-eks cluster: lowercase letter first, then lowercase letters, "
            "digits and -, not ending in -, at most 100 characters (it names the EKS cluster and the tag "
            "kubernetes.io/cluster/<alias> of its resources)",
            data,
            "alias",
        )
    if EKS_NAME_ITEM in cluster.config_items:
        check.fail(
            f"config_items.{EKS_NAME_ITEM}",
            "not for a zalando-eks cluster: its EKS cluster is named by its alias, as CLM names it",
            data.get("config_items"),
            EKS_NAME_ITEM,
        )


def parse_cluster(data: Any, source: str | None = None) -> Cluster:
    """Validate one cluster in CLM's registry format; raise ValidationError naming every culprit."""
    check = _Checker()
    cluster_id = data.get("id") if isinstance(data, dict) else None
    label = str(cluster_id) if cluster_id else None
    if not check.mapping(data, "", CLUSTER_FIELDS, CLUSTER_REQUIRED):
        raise ValidationError(check.problems, label, source)
    strings: dict[str, Callable[[], Any]] = {
        "id": lambda: check.string(data, "id", "id", CLUSTER_ID_RE, "letters, digits and : . _ -"),
        "local_id": lambda: check.string(
            data, "local_id", "local_id", LOCAL_ID_RE, "lowercase letter first, then lowercase letters, digits, -"
        ),
        "infrastructure_account": lambda: check.string(
            data, "infrastructure_account", "infrastructure_account", ACCOUNT_RE, "aws:<12 digits>"
        ),
        "region": lambda: check.string(data, "region", "region", REGION_RE, "e.g. eu-central-1"),
        "provider": lambda: _provider(check, data),
        "alias": lambda: check.string(data, "alias", "alias"),
        "api_server_url": lambda: check.string(data, "api_server_url", "api_server_url") or "",
        "environment": lambda: check.string(data, "environment", "environment"),
    }
    values = {name: read() for name, read in strings.items()}
    url = values["api_server_url"]
    if url and not URL_RE.fullmatch(url):
        check.fail("api_server_url", f"{url!r} is not an http(s) URL", data, "api_server_url")
    optional = {
        name: check.string(data, name, name, default=None)
        for name in ("channel", "owner", "account_name", "created_at")
    }
    status = _parse_status(check, data)
    cluster = Cluster(
        **values,
        **optional,
        lifecycle_status=check.one_of(data, "lifecycle_status", "lifecycle_status", LIFECYCLE_STATUSES, "requested"),
        criticality_level=check.integer(data, "criticality_level", "criticality_level", INT32_MAX),
        config_items=check.config_items(data, "config_items"),
        node_pools=_parse_pools(check, data),
        status=status,
    )
    _check_eks(check, data, cluster)
    if check.problems:
        raise ValidationError(check.problems, label, source)
    return cluster
