"""The network values CLM gives templates (provisioner/clusterpy.go Provision, aws_az.go, hosted_zone.go), from the
cluster's VPC and subnets (clm.render.lookups describes them) and its API URL: for nodes, one subnet per zone
preferring the `kubernetes.io/role/node` tag (`values.subnets`: zone -> subnet and `*` -> all of them;
`availability_zones`; `subnet_ipv6_cidrs`), the same choice by the `elb`, `internal-node` and `pod` role tags
(`lb_subnets`, `internal_node_subnets`, `pod_subnets`), `vpc_ipv4_cidr`, `vpc_ipv6_cidrs` and `hosted_zone`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

ALL_ZONES = "*"
NODE_ROLE_TAG = "kubernetes.io/role/node"
ROLE_TAGS = {  # value -> the tag its subnets are chosen by (clusterpy.go subnet*RoleTagName)
    "lb_subnets": "kubernetes.io/role/elb",
    "internal_node_subnets": "kubernetes.io/role/internal-node",
    "pod_subnets": "kubernetes.io/role/pod",
}
CUSTOM_SUBNET_TAG = "zalando.org/custom-subnet"
NETWORK_KEYS = (
    "subnets",
    "availability_zones",
    "subnet_ipv6_cidrs",
    *ROLE_TAGS,
    "vpc_ipv4_cidr",
    "vpc_ipv6_cidrs",
)


def hosted_zone(api_server_url: str) -> str:
    """The API server's domain less its first label (`https://kube-1.example.org` -> `example.org`)."""
    parts = urlsplit(str(api_server_url)).netloc.rpartition("@")[2].split(".")
    if len(parts) < 2:
        raise ValueError(f"can't derive hosted zone from URL {api_server_url}")
    return ".".join(parts[1:])


def _tags(subnet: Mapping[str, Any]) -> dict[str, str]:
    return {tag["Key"]: tag.get("Value", "") for tag in subnet.get("Tags") or []}


def _ipv6_cidrs(described: Mapping[str, Any]) -> list[str]:
    """The IPv6 CIDRs of a described subnet or VPC (its Ipv6CidrBlockAssociationSet, every state, as CLM)."""
    return [block["Ipv6CidrBlock"] for block in described.get("Ipv6CidrBlockAssociationSet") or []]


def select_subnets(subnets: Iterable[Mapping[str, Any]], tag: str = NODE_ROLE_TAG) -> dict[str, Mapping[str, Any]]:
    """One subnet per zone (selectSubnetIDs): one with the role tag `tag` if any, else the first by id."""
    chosen: dict[str, Mapping[str, Any]] = {}
    for subnet in subnets:
        zone = subnet["AvailabilityZone"]
        existing = chosen.get(zone)
        if existing is None:
            chosen[zone] = subnet
            continue
        tagged, existing_tagged = tag in _tags(subnet), tag in _tags(existing)
        if tagged != existing_tagged:
            if tagged:
                chosen[zone] = subnet
        elif subnet["SubnetId"] < existing["SubnetId"]:
            chosen[zone] = subnet
    return chosen


@dataclass(frozen=True)
class AzInfo:
    """The cluster's zones and their subnet (CLM's AZInfo), and each subnet's IPv6 CIDRs."""

    subnets: Mapping[str, str]
    ipv6_cidrs: Mapping[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, chosen: Mapping[str, Mapping[str, Any]]) -> AzInfo:
        """The AZInfo of described subnets by zone."""
        return cls(
            {zone: subnet["SubnetId"] for zone, subnet in chosen.items()},
            {zone: _ipv6_cidrs(subnet) for zone, subnet in chosen.items()},
        )

    def restrict(self, zones: Iterable[str]) -> AzInfo:
        """Only the given zones that have a subnet."""
        kept = [zone for zone in zones if zone in self.subnets]
        return AzInfo({zone: self.subnets[zone] for zone in kept}, {z: self.ipv6_cidrs.get(z, []) for z in kept})

    def subnet_ipv6_cidrs(self) -> str:
        """The subnets' IPv6 CIDRs, comma-separated, in zone order (CLM's come in Go's random map order)."""
        return ",".join(cidr for zone in self.availability_zones() for cidr in self.ipv6_cidrs.get(zone, []))

    def availability_zones(self) -> list[str]:
        """The zones, sorted."""
        return sorted(self.subnets)

    def subnets_by_az(self) -> dict[str, str]:
        """Zone -> subnet, and `*` -> every subnet in zone order, comma-separated."""
        zones = self.availability_zones()
        result = {zone: self.subnets[zone] for zone in zones}
        if zones:
            result[ALL_ZONES] = ",".join(self.subnets[zone] for zone in zones)
        return result

    def values(self) -> dict[str, Any]:
        """`subnets` and `availability_zones` as templates see them."""
        return {"subnets": self.subnets_by_az(), "availability_zones": self.availability_zones()}


def _usable(subnets: Iterable[Mapping[str, Any]], items: Mapping[str, str]) -> list[Mapping[str, Any]]:
    """The cluster's subnets: custom subnets left out, only the `subnets` config item's if set (all must exist)."""
    usable = [subnet for subnet in subnets if CUSTOM_SUBNET_TAG not in _tags(subnet)]
    if "subnets" in items:
        wanted = str(items["subnets"]).split(",")
        usable = [subnet for subnet in usable if subnet["SubnetId"] in wanted]
        if len(usable) != len(wanted):
            raise ValueError(f"invalid or unknown subnets; desired {wanted}")
    return usable


def az_info(
    subnets: Iterable[Mapping[str, Any]], items: Mapping[str, str], tag: str = NODE_ROLE_TAG, restrict: bool = True
) -> AzInfo:
    """The cluster's zones as CLM's Provision chooses them for the role `tag`: one usable subnet per zone, only
    the `availability_zones` item's zones if set (and `restrict`)."""
    info = AzInfo.of(select_subnets(_usable(subnets, items), tag))
    if restrict and "availability_zones" in items:
        info = info.restrict(str(items["availability_zones"]).split(","))
    return info


def network_values(
    subnets: Iterable[Mapping[str, Any]], vpc: Mapping[str, Any], items: Mapping[str, str]
) -> dict[str, Any]:
    """Every network value of a cluster from its VPC and subnets (described) and config items. As CLM,
    `pod_subnets` ignores the `availability_zones` item."""
    subnets = list(subnets)
    nodes = az_info(subnets, items)
    values = {**nodes.values(), "subnet_ipv6_cidrs": nodes.subnet_ipv6_cidrs()}
    for name, tag in ROLE_TAGS.items():
        values[name] = az_info(subnets, items, tag, restrict=name != "pod_subnets").subnets_by_az()
    return {**values, "vpc_ipv4_cidr": vpc["CidrBlock"], "vpc_ipv6_cidrs": _ipv6_cidrs(vpc)}


class Unavailable(Mapping[str, Any]):
    """A value the renderer could not compute (EC2 refused, no VPC...): any use in a template fails with the
    reason, at the template's line."""

    def __init__(self, reason: str):
        self._reason = reason

    def _fail(self, *_: Any) -> Any:
        raise ValueError(self._reason)

    __getitem__ = __len__ = __str__ = _fail

    def __iter__(self) -> Iterator[str]:
        raise ValueError(self._reason)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise ValueError(self._reason)
