"""What a warm container keeps per target it worked in (bench/target_sessions.py): its target session and a client
of each service it asked there, as Python objects (tracemalloc). The sessions share the container's loader
(clm.target_sessions), so the service models are parsed by the first target only.
"""

from __future__ import annotations

import gc
import tracemalloc
from dataclasses import dataclass

import boto3
from cost import FUNCTION_GB
from target_world import HUB, TARGET, TARGET_ROLE

from clm.target_sessions import TargetSessions
from clm.targets import Target, TargetPolicy

SERVICES = ("cloudformation", "s3", "ec2", "autoscaling", "kms", "sts")  # what steps ask of a target (clm.workflow)
# The services each function's steps ask of a target (clm.workflow's `where.client(...)`).
FUNCTION_SERVICES = {
    "stacks": ("cloudformation", "s3", "ec2"),
    "roll": ("autoscaling", "ec2", "cloudformation"),
}


@dataclass(frozen=True)
class Kept:
    """What `targets` kept targets hold: clients, and Python memory (bytes) in all and, in the first target, of its
    session (AssumeRole and the verifying STS client) and of each service's client."""

    targets: int
    clients: int
    memory: int
    first: dict[str, int]


def kept_targets(targets: int) -> Kept:
    """`targets` targets (accounts 300000000000…, assumed with the sandbox's admin key, which is not judged), each
    with a client of every service in SERVICES, as a container that worked in all of them keeps them."""
    admin = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=HUB.region)
    sessions = TargetSessions(TargetPolicy(None, role_name=TARGET_ROLE), admin.client("sts"))
    first: dict[str, int] = {}
    gc.collect()
    tracemalloc.start()
    try:
        start = _traced()
        for i in range(targets):
            target = Target(str(300000000000 + i), TARGET.region)
            cluster = f"aws:{target.account}:{target.region}:kept-{i}"
            mark = _traced()
            sessions.session(cluster, target)
            if not i:
                first["session"], mark = _traced() - mark, _traced()
            for service in SERVICES:
                sessions.client(service, cluster, target)
                if not i:
                    first[service], mark = _traced() - mark, _traced()
        memory = _traced() - start
    finally:
        tracemalloc.stop()
    return Kept(targets, sum(len(kept.clients) for kept in sessions._kept.values()), memory, first)


def _traced() -> int:
    """Bytes of Python objects alive (garbage collected first)."""
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def print_kept(found: Kept) -> None:
    """The first target (it parses the service models, shared by every later target's session), each further target,
    100 targets, and how many targets each function keeps within its memory size."""
    mib = 2**20
    first = sum(found.first.values())
    further = (found.memory - first) / max(found.targets - 1, 1)
    print(
        f"kept targets: {found.targets} targets x {len(SERVICES)} services = {found.clients} clients, "
        f"{found.memory / mib:.0f} MiB of Python objects: the first {first / mib:.1f} MiB (the models, parsed once), "
        f"each further {further / mib:.2f} MiB (100 targets: ~{(first + 99 * further) / mib:,.0f} MiB)"
    )
    print("  the first target, MiB: " + ", ".join(f"{name} {size / mib:.1f}" for name, size in found.first.items()))
    for function, services in FUNCTION_SERVICES.items():
        once = found.first["session"] + sum(found.first[service] for service in services)
        limit = FUNCTION_GB[function] * 1024
        print(
            f"  {function} ({', '.join(services)}): {once / mib:.1f} MiB once, then at most {further / mib:.2f} MiB a "
            f"target: ~{(limit - once / mib) / (further / mib):,.0f} targets fill its {limit:.0f} MB"
        )
