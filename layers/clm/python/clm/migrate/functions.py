"""The one table of what Go templates use and what the translation makes of it: fields, functions, helpers.

| Go | Jinja2 | note |
| --- | --- | --- |
| `.Cluster.LocalID`, `.NodePool.IsSpot` | `cluster.local_id`, `node_pool.is_spot` | snake_case |
| `.Cluster.ConfigItems.k`, `.Values.k` | `cluster.config_items.k`, `values.k` | map keys kept |
| `index M "k"` (string map) | `M.get("k", "")` | missing: Go's zero value |
| `index L 0`, other `index` | `L[0]`, `go_index(x, k)` | |
| `if`, `else if`, `else` | `{% if %}`, `{% elif %}`, `{% else %}` | Python truth is Go's |
| `with p` | `{% set it = p %}{% if it %}` | a plain path: `{% if p %}` |
| `range L`, `range $i, $x := L` | `{% for x in L %}` (+ `loop.index0`) | lists |
| `range M` | `{% for k, v in M \\| dictsort %}` | Go: key order |
| `range x` (kind unknown) | `{% for k, v in x \\| go_items %}` | |
| `$x = v` in a loop | `{% set x = namespace(value=..) %}` | loops scope `set` |
| `and`, `or`, `not` | `and`, `or`, `not` | Python's return an operand |
| `eq a b c`, `ne`, `lt`.. | `a in (b, c)`, `!=`, `<`.. | eq: equals any |
| `len x` | `x \\| length` | |
| `print a b` | `a ~ b`, else `sprint(a, b)` | `~` if Go adds no space |
| `printf`, `println` | `printf(..)`, `sprintln(..)` | Go's verbs |
| output of a bool | `x \\| lower` | Go prints `true` |
| output of a list, map | `x \\| go_str` | `[a b]`, `map[k:v]` |
| `dict "k" v`, `list a b` | `dict(k=v)`, `[a, b]` | |
| `define`, `template`, `block` | `{% macro %}`, `name(data)` | hoisted if used first |
| `accountID`, CLM functions | `account_id`, snake_case | `getAWSAccountID`: `account_id` |
| `html`, `js`, `break`.. | marked, `untranslated(..)` | fails if reached |

Helpers (`printf`, `sprint`, `sprintln`, `go_str`, `go_index`, `go_items`, `untranslated`) are in
clm.render.go_functions. Values of unknown type (`values.*`, results of functions CLM here lacks) are
printed as they are: Go and Jinja print strings and integers alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Type:
    """What the translation knows of a value: `kind` is str, int, bool, any, list, map, struct or record;
    `item` the type of a list's items or a map's values; `name` a struct's (root, cluster, node_pool);
    `fields` a record's (a `dict` with literal keys); `nullable` a struct that may be nil."""

    kind: str
    item: Type | None = None
    name: str = ""
    fields: tuple[tuple[str, Type], ...] = ()
    nullable: bool = False  # a struct that may be nil (`with` tests it)

    def field(self, key: str) -> Type:
        """The type of a record's or map's entry `key`."""
        return dict(self.fields).get(key, self.item or ANY)


STR, INT, BOOL, ANY = Type("str"), Type("int"), Type("bool"), Type("any")
STR_LIST, STR_MAP, ANY_LIST, ANY_MAP = Type("list", STR), Type("map", STR), Type("list", ANY), Type("map", ANY)
CLUSTER, NODE_POOL, ROOT = Type("struct", name="cluster"), Type("struct", name="node_pool"), Type("struct", name="root")

# Go field -> type; the Jinja name is the snake_case of the Go name (root: the template variables).
STRUCT_FIELDS: dict[str, dict[str, Type]] = {
    "root": {"Cluster": CLUSTER, "NodePool": NODE_POOL, "Values": ANY_MAP},
    "cluster": {
        **dict.fromkeys(
            "ID Alias LocalID APIServerURL Channel Environment LifecycleStatus InfrastructureAccount Region "  # noqa: SIM905
            "Provider Owner AccountName Name WorkerRoleARN OIDCProvider IAMRoleTrustRelationshipTemplate".split(),
            STR,
        ),
        "IsOldestReadyClusterInTheRegion": BOOL,
        "SiblingCluster": Type("struct", name="sibling", nullable=True),
        "CriticalityLevel": INT,
        "ConfigItems": STR_MAP,
        "NodePools": Type("list", NODE_POOL),
        "Outputs": STR_MAP,
    },
    "sibling": {  # what a template sees of another cluster (clm.render.account_clusters.AccountCluster)
        **dict.fromkeys(
            "ID Alias LocalID Region Provider LifecycleStatus APIServerURL InfrastructureAccount CreatedAt Name "  # noqa: SIM905
            "WorkerRoleARN OIDCProvider".split(),
            STR,
        ),
    },
    "node_pool": {
        **dict.fromkeys(["Name", "Profile", "DiscountStrategy", "KarpenterInstanceTypeStrategy"], STR),
        "MinSize": INT,
        "MaxSize": INT,
        "InstanceTypes": STR_LIST,
        "ConfigItems": STR_MAP,
        "IsSpot": BOOL,
        "IsKarpenter": BOOL,
        "Taints": ANY_LIST,
        "KarpenterRequirements": ANY_LIST,
    },
}
VALUES = Type(
    "map",
    ANY,
    fields=(
        ("availability_zones", STR_LIST),
        ("subnets", STR_MAP),
        ("lb_subnets", STR_MAP),
        ("internal_node_subnets", STR_MAP),
        ("pod_subnets", STR_MAP),
        ("subnet_ipv6_cidrs", STR),
        ("vpc_ipv6_cidrs", STR_LIST),
        ("hosted_zone", STR),
        ("vpc_ipv4_cidr", STR),
    ),
)
STRUCT_FIELDS["root"]["Values"] = VALUES
ROOT_NAMES = {"Cluster": "cluster", "NodePool": "node_pool", "Values": "values"}


@dataclass(frozen=True)
class Function:
    """A Go template function: its Jinja name and result type."""

    name: str
    returns: Type = STR


_F = Function
# CLM's functions (provisioner/template.go) and sprig's `join`/`indent`, which CLM adds.
FUNCTIONS: dict[str, Function] = {
    "base64": _F("base64"),
    "base64Decode": _F("base64_decode"),
    "sha256": _F("sha256"),
    "manifestHash": _F("manifest_hash"),
    "accountID": _F("account_id"),
    "getAWSAccountID": _F("account_id"),  # CLM splits on ":"; the same on `type:id` text
    "azID": _F("az_id"),
    "azCount": _F("az_count", INT),
    "split": _F("split", STR_LIST),
    "join": _F("join"),
    "indent": _F("indent"),
    "parseInt64": _F("parse_int", INT),
    "asgSize": _F("asg_size", INT),
    "eksID": _F("eks_id"),
    "clusterName": _F("cluster_name"),
    "mountUnitName": _F("mount_unit_name"),
    "portRanges": _F("port_ranges", ANY_LIST),
    "sgIngressRanges": _F("sg_ingress_ranges", ANY_LIST),
    "splitHostPort": _F("split_host_port", ANY),
    "extractEndpointHosts": _F("extract_endpoint_hosts", STR_LIST),
    "publicKey": _F("public_key"),
    "stupsNATSubnets": _F("stups_nat_subnets", STR_LIST),
    "amiID": _F("ami_id"),
    "nodeCIDRMaxNodes": _F("node_cidr_max_nodes", INT),
    "nodeCIDRMaxNodesPodCIDR": _F("node_cidr_max_nodes_pod_cidr", INT),
    "nodeCIDRMaxPods": _F("node_cidr_max_pods", INT),
    "nthAddressFromCIDR": _F("nth_address_from_cidr"),
    "parseInt": _F("parse_int", INT),
    "generateJWKSDocument": _F("generate_jwks_document"),
    "generateOIDCDiscoveryDocument": _F("generate_oidc_discovery_document"),
    "kubernetesSizeToKiloBytes": _F("kubernetes_size_to_kilo_bytes"),
    "indexedList": _F("indexed_list"),
    "zoneDistributedNodePoolGroups": _F("zone_distributed_node_pool_groups", Type("map", BOOL)),
    "nodeLifeCycleProviderPerNodePoolGroup": _F("node_life_cycle_provider_per_node_pool_group", STR_MAP),
    "certificateExpiry": _F("certificate_expiry"),
    "sumQuantities": _F("sum_quantities"),
    "awsValidID": _F("aws_valid_id"),
    "scaleQuantity": _F("scale_quantity"),
    "instanceTypeCPUQuantity": _F("instance_type_cpu_quantity"),
    "instanceTypeMemoryQuantity": _F("instance_type_memory_quantity"),
    "hasPrefix": _F("has_prefix", BOOL),
    "hasSuffix": _F("has_suffix", BOOL),
    "append": _F("append", STR_LIST),
}
# Go's builtins that the expression translator writes as operators or helpers (clm.migrate.expressions).
BUILTINS = frozenset(
    "and or not eq ne lt le gt ge len index print printf println dict list html js urlquery call slice".split()  # noqa: SIM905
)
# Helpers the translation calls (clm.render.go_functions), and what renders them.
HELPERS = frozenset({"printf", "sprint", "sprintln", "go_index", "go_items", "go_str", "untranslated"})

_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """`APIServerURL` -> `api_server_url`, `LocalID` -> `local_id`, `nodeCIDRMaxPods` -> `node_cidr_max_pods`."""
    return _WORD.sub("_", name).lower()


def function(name: str) -> Function:
    """The translation of a Go function not in the table: its snake_case name (reported if the renderer lacks it)."""
    return FUNCTIONS.get(name) or Function(snake_case(name), ANY)


def renderer_names() -> frozenset[str]:
    """Every function the renderer's templates can call."""
    from clm.render.functions import FUNCTIONS as RENDER_FUNCTIONS
    from clm.render.functions import GLOBALS_ONLY
    from clm.render.lookups import LOOKUP_FUNCTIONS

    return frozenset(
        {*RENDER_FUNCTIONS, *GLOBALS_ONLY, *LOOKUP_FUNCTIONS, "manifest_hash", "dict", "range", "namespace"}
    )


def model_fields(struct: str) -> frozenset[str]:
    """The snake_case names that CLM's model has on a cluster or node pool (the rest are reported missing)."""
    from clm.model import NodePool
    from clm.render.account_clusters import AccountCluster, TemplateCluster

    kind = {"cluster": TemplateCluster, "node_pool": NodePool, "sibling": AccountCluster}[struct]
    return frozenset(name for name in dir(kind) if not name.startswith("_")) | frozenset(kind.__dataclass_fields__)
