"""CLM's network functions (provisioner/template.go): node CIDR sizes, STUPS NAT subnets, port and security group
ingress ranges, host:port, the nth address of a CIDR and etcd endpoint hosts, with Go's parsing (net.ParseCIDR,
net.SplitHostPort, strconv.Atoi, url.Parse) and errors."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

_ATOI = re.compile(r"[+-]?\d+")
_PORT = re.compile(r":\d*")
MAX_PODS = 110
# Ranges in one portRanges/sgIngressRanges argument: a security group holds at most 1,000 rules (AWS's quota),
# so more is an error, not a million records made.
MAX_RANGES = 1000
INT64 = 2**63


def _mask_size(mask_size: int) -> None:
    if not 24 <= mask_size <= 28:
        raise ValueError(f"invalid value for maskSize: {mask_size}")


def node_cidr_max_nodes_pod_cidr(pod_cidr_mask_size: int, mask_size: int, reserved: int) -> int:
    """Nodes that a pod CIDR (/14 to /16) holds with a node CIDR of /24 to /28, less `reserved`."""
    if not 14 <= pod_cidr_mask_size <= 16:
        raise ValueError(f"invalid for podCIDRMaskSize: {pod_cidr_mask_size}")
    _mask_size(mask_size)
    return 2 ** (mask_size - pod_cidr_mask_size) - reserved


def node_cidr_max_nodes(mask_size: int, reserved: int) -> int:
    """CLM's older nodeCIDRMaxNodes: the same with a /16 pod CIDR."""
    return node_cidr_max_nodes_pod_cidr(16, mask_size, reserved)


def node_cidr_max_pods(mask_size: int, extra_capacity: int) -> int:
    """Pods a node CIDR of /24 to /28 holds (half its addresses) plus `extra_capacity`, at most 110."""
    _mask_size(mask_size)
    return min(2 ** (31 - mask_size) + extra_capacity, MAX_PODS)


def _network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """net.ParseCIDR: an address and a prefix length (the network of the address, host bits cleared)."""
    address, sep, prefix = str(cidr).partition("/")
    if not sep or not prefix.isascii() or not prefix.isdigit() or "%" in address:
        raise ValueError(f"invalid CIDR address: {cidr}")
    try:
        return ipaddress.ip_network(f"{address}/{int(prefix)}", strict=False)
    except ValueError:
        raise ValueError(f"invalid CIDR address: {cidr}") from None


def stups_nat_subnets(vpc_cidr: str) -> list[str]:
    """The three /28 NAT subnets of a STUPS VPC (/1 to /24): the first of the VPC's second quarter."""
    network = _network(vpc_cidr)
    if network.prefixlen == 0 or network.prefixlen > 24:
        raise ValueError(f"invalid subnet, expecting at least /24: {network}")
    if network.version != 4:
        raise ValueError(f"only ipv4 subnets are supported, got {network}")
    quarter = list(network.subnets(new_prefix=network.prefixlen + 2))[1]
    return [str(ipaddress.ip_network(f"{quarter.network_address + 16 * i}/28")) for i in range(3)]


def _atoi(text: str, message: str) -> int:
    """strconv.Atoi: a decimal int64 with an optional sign."""
    if not _ATOI.fullmatch(text) or not -INT64 <= int(text) < INT64:
        raise ValueError(message)
    return int(text)


def _range_items(ranges: str, function: str) -> list[str]:
    """The comma-separated items of a ranges argument, at most MAX_RANGES."""
    if str(ranges).count(",") >= MAX_RANGES:
        raise ValueError(f"{function}: more than {MAX_RANGES} ranges (a security group holds at most that many rules)")
    return str(ranges).split(",")


def _check_ports(first: int, last: int) -> None:
    if first > last or last > 65535 or first < 0:
        raise ValueError(f"port range {first}-{last} is invalid")


def port_ranges(ranges: str) -> list[dict[str, int]]:
    """`<port>-<port>,...` as records with CLM's fields FromPort, ToPort (portRanges)."""
    result = []
    for item in _range_items(ranges, "portRanges"):
        bounds = item.split("-")
        if len(bounds) != 2:
            raise ValueError(f"invalid input for portRange: {ranges}")
        first = _atoi(bounds[0], f"invalid start port: {bounds[0]} in input: {ranges}")
        last = _atoi(bounds[1], f"invalid end port: {bounds[1]} in input: {ranges}")
        _check_ports(first, last)
        result.append({"FromPort": first, "ToPort": last})
    return result


def sg_ingress_ranges(ranges: str) -> list[dict[str, Any]]:
    """`[tcp|udp:]<cidr>:<port>[-<port>],...` as records with CLM's fields CIDR, FromPort, ToPort, Protocol."""
    result = []
    for item in _range_items(ranges, "sgIngressRanges"):
        fields = item.split(":")
        if len(fields) == 2:
            protocol, cidr, ports = "tcp", *fields
        elif len(fields) == 3:
            protocol, cidr, ports = fields
            if protocol not in ("tcp", "udp"):
                raise ValueError(f"invalid protocol '{protocol}' only 'tcp' or 'udp' supported: {ranges}")
        else:
            raise ValueError(f"invalid input for sgIngressRanges: {ranges}")
        network = _network(cidr)
        bounds = ports.split("-")
        if len(bounds) > 2:
            raise ValueError(f"invalid input for sgIngressRanges: {ranges}")
        first = _atoi(bounds[0], f"invalid start port: {bounds[0]} in input: {ranges}")
        last = _atoi(bounds[-1], f"invalid end port: {bounds[-1]} in input: {ranges}")
        _check_ports(first, last)
        result.append({"CIDR": str(network), "FromPort": first, "ToPort": last, "Protocol": protocol})
    return result


def _hostname(endpoint: str) -> str:
    """url.Parse(endpoint).Hostname() for an http(s) URL: the host without user, port or IPv6 brackets."""
    authority = endpoint.split("//", 1)[1] if "//" in endpoint else ""
    authority = re.split(r"[/?#]", authority, maxsplit=1)[0].rpartition("@")[2]
    if authority.startswith("["):
        host, bracket, rest = authority[1:].partition("]")
        if not bracket or (rest and not _PORT.fullmatch(rest)):
            raise ValueError(f"unable to parse endpoint '{endpoint}': invalid host")
        return host
    host, colon, port = authority.rpartition(":")
    if not colon:
        return authority
    if not port.isdigit() and port:
        raise ValueError(f"unable to parse endpoint '{endpoint}': invalid port \":{port}\" after host")
    return host


def extract_endpoint_hosts(endpoints: str) -> list[str]:
    """The distinct host names of comma-separated endpoints (`http://` assumed where no scheme is), sorted."""
    hosts = set()
    for endpoint in str(endpoints).split(","):
        hosts.add(_hostname(endpoint if endpoint.startswith("http") else "http://" + endpoint))
    return sorted(hosts)


def split_host_port(hostport: str) -> dict[str, str]:
    """net.SplitHostPort as a record with CLM's fields Host, Port (splitHostPort): `[::1]:80` -> ::1, 80."""
    text = str(hostport)

    def error(why: str) -> ValueError:
        return ValueError(f"address {text}: {why}")

    colon = text.rfind(":")
    if colon < 0:
        raise error("missing port in address")
    start, end = 0, 0
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise error("missing ']' in address")
        if close + 1 != colon:
            colons = text[close + 1 : close + 2] == ":"
            raise error("too many colons in address" if colons else "missing port in address")
        host, start, end = text[1:close], 1, close + 1
    else:
        host = text[:colon]
        if ":" in host:
            raise error("too many colons in address")
    if "[" in text[start:]:
        raise error("unexpected '[' in address")
    if "]" in text[end:]:
        raise error("unexpected ']' in address")
    return {"Host": host, "Port": text[colon + 1 :]}


def nth_address_from_cidr(cidr: str, n: int) -> str:
    """The address `n` after a CIDR's network address (nthAddressFromCIDR). CLM adds n to the last byte alone,
    wrapping past 255 without a carry; here an `n` that would need a carry (or is negative) is an error."""
    network = _network(cidr)
    if not isinstance(n, int) or isinstance(n, bool):
        raise ValueError(f"nthAddressFromCIDR: n must be an integer, got {n!r}")
    last_byte = int(network.network_address) & 0xFF
    if not 0 <= n <= 0xFF - last_byte:
        raise ValueError(
            f"nthAddressFromCIDR: address {n} of {cidr} is outside 0..{0xFF - last_byte} (CLM adds n to the last "
            "byte alone, wrapping past 255 without a carry; a different address than asked)"
        )
    return str(network.network_address + n)
