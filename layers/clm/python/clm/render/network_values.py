"""The network values CLM gives templates (provisioner/clusterpy.go Provision, aws_az.go, hosted_zone.go):
`values.subnets` (zone -> subnet, and `*` -> all of them), `values.availability_zones`, `values.vpc_ipv4_cidr` and
`values.hosted_zone`, from the cluster's VPC and subnets (clm.render.lookups describes them) and its API URL."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

ALL_ZONES = "*"
ELB_ROLE_TAG = "kubernetes.io/role/elb"
CUSTOM_SUBNET_TAG = "zalando.org/custom-subnet"
NETWORK_KEYS = ("subnets", "availability_zones", "vpc_ipv4_cidr")


def hosted_zone(api_server_url: str) -> str:
    """The API server's domain less its first label (`https://kube-1.example.org` -> `example.org`)."""
    parts = urlsplit(str(api_server_url)).netloc.rpartition("@")[2].split(".")
    if len(parts) < 2:
        raise ValueError(f"can't derive hosted zone from URL {api_server_url}")
    return ".".join(parts[1:])


def _tags(subnet: Mapping[str, Any]) -> dict[str, str]:
    return {tag["Key"]: tag.get("Value", "") for tag in subnet.get("Tags") or []}


def select_subnets(subnets: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """One subnet per zone (selectSubnetIDs): one with the ELB role tag if any, else the first by id."""
    chosen: dict[str, Mapping[str, Any]] = {}
    for subnet in subnets:
        zone = subnet["AvailabilityZone"]
        existing = chosen.get(zone)
        if existing is None:
            chosen[zone] = subnet
            continue
        tagged, existing_tagged = ELB_ROLE_TAG in _tags(subnet), ELB_ROLE_TAG in _tags(existing)
        if tagged != existing_tagged:
            if tagged:
                chosen[zone] = subnet
        elif subnet["SubnetId"] < existing["SubnetId"]:
            chosen[zone] = subnet
    return {zone: subnet["SubnetId"] for zone, subnet in chosen.items()}


@dataclass(frozen=True)
class AzInfo:
    """The cluster's zones and their subnet (CLM's AZInfo)."""

    subnets: Mapping[str, str]

    def restrict(self, zones: Iterable[str]) -> AzInfo:
        """Only the given zones that have a subnet."""
        return AzInfo({zone: self.subnets[zone] for zone in zones if zone in self.subnets})

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


def az_info(subnets: Iterable[Mapping[str, Any]], items: Mapping[str, str]) -> AzInfo:
    """The cluster's zones as CLM's Provision chooses them: custom subnets left out, only the `subnets` config
    item's if set (all must exist), one per zone, only the `availability_zones` item's zones if set."""
    usable = [subnet for subnet in subnets if CUSTOM_SUBNET_TAG not in _tags(subnet)]
    if "subnets" in items:
        wanted = str(items["subnets"]).split(",")
        usable = [subnet for subnet in usable if subnet["SubnetId"] in wanted]
        if len(usable) != len(wanted):
            raise ValueError(f"invalid or unknown subnets; desired {wanted}")
    info = AzInfo(select_subnets(usable))
    if "availability_zones" in items:
        info = info.restrict(str(items["availability_zones"]).split(","))
    return info


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
