"""The rollout policy's model: waves of clusters chosen by selectors, each with its concurrency, order and bake
time, and the policy's bound on clusters changing at once. Built by clm.rollout.parse; see docs/rollouts.md."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from clm.model import Cluster

# Fields a wave may order its clusters by; `-` before one reverses it. `id` always ends the order (determinism).
ORDER_KEYS = ("criticality", "environment", "id", "region", "account", "channel")
DEFAULT_ORDER = ("criticality", "id")
DEFAULT_ENVIRONMENTS = ("test", "staging", "production")
UNMATCHED = "unmatched"  # the wave of clusters no wave of the policy selects


@dataclass(frozen=True)
class Selector:
    """Which clusters a wave takes: every field given must match (a field matches when the cluster's value is one
    of those listed); no field given selects every cluster."""

    environment: frozenset[str] | None = None
    criticality: frozenset[int] | None = None
    channel: frozenset[str] | None = None
    account: frozenset[str] | None = None  # 12-digit account ids
    region: frozenset[str] | None = None
    clusters: frozenset[str] | None = None  # cluster ids
    config_items: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def matches(self, cluster: Cluster) -> bool:
        """Whether `cluster` has, for every field given, one of its values."""
        return (
            _among(cluster.environment, self.environment)
            and _among(cluster.criticality_level, self.criticality)
            and _among(cluster.channel or "", self.channel)
            and _among(cluster.account_id, self.account)
            and _among(cluster.region, self.region)
            and _among(cluster.id, self.clusters)
            and all(cluster.config_items.get(name) in values for name, values in self.config_items.items())
        )


def _among(value: object, allowed: frozenset | None) -> bool:
    return allowed is None or value in allowed


@dataclass(frozen=True)
class Concurrency:
    """How many of a wave's clusters may change at once: a count, or a percentage (1 to 100) of the wave's
    clusters."""

    value: int
    percent: bool = False

    def resolve(self, clusters: int) -> int:
        """The count for a wave of `clusters`: a percentage rounded up, no more than the wave's clusters, at least 1."""
        count = math.ceil(clusters * self.value / 100) if self.percent else self.value
        return max(1, min(count, clusters))

    def __str__(self) -> str:
        return f"{self.value}%" if self.percent else str(self.value)


@dataclass(frozen=True)
class Wave:
    """A wave: the clusters its selector takes (and `exclude` does not; at most `size` of them, the first by
    `order`, the others left to later waves), how many change at once, and the seconds to wait after it
    completes before the next wave starts."""

    name: str
    selector: Selector = field(default_factory=Selector)
    exclude: Selector | None = None
    size: int | None = None
    concurrency: Concurrency = Concurrency(1)
    bake_seconds: int = 0
    order: tuple[str, ...] = DEFAULT_ORDER

    def takes(self, cluster: Cluster) -> bool:
        """Whether the wave's selector takes `cluster` (before `size`)."""
        return self.selector.matches(cluster) and not (self.exclude and self.exclude.matches(cluster))


ALARM_FIELDS = ("id", "local_id", "alias", "environment", "account", "region")  # what an alarm name may name
ALARM_FIELD = re.compile(r"\{([^{}]*)\}")


def alarm_name(template: str, cluster: Cluster) -> str:
    """`template` with each `{field}` (one of ALARM_FIELDS) replaced by the cluster's value."""
    values = {name: str(getattr(cluster, name if name != "account" else "account_id")) for name in ALARM_FIELDS}
    return ALARM_FIELD.sub(lambda match: values[match.group(1)], template)


@dataclass(frozen=True)
class HealthGate:
    """What a cluster's health must show after its run for the run to pass: `hold_seconds` of consecutive healthy
    checks, `interval_seconds` apart, reached within `timeout_seconds` of the first check. Healthy: every node
    Ready, every workload of `namespaces` and the named `workloads` (`namespace/kind/name`) available, no problem
    recorded on the cluster since the gate began, none of the CloudWatch `alarms` (name templates) in ALARM."""

    hold_seconds: int = 180
    timeout_seconds: int = 900
    interval_seconds: int = 30
    namespaces: tuple[str, ...] = ("kube-system",)
    workloads: tuple[str, ...] = ()
    alarms: tuple[str, ...] = ()

    @property
    def checks_needed(self) -> int:
        """Consecutive healthy checks that make the hold (at least one)."""
        return max(1, math.ceil(self.hold_seconds / self.interval_seconds))

    @property
    def max_checks(self) -> int:
        """Checks before the gate fails (the timeout, and never fewer than a hold needs)."""
        return max(self.checks_needed, math.ceil(self.timeout_seconds / self.interval_seconds))

    def spec(self, cluster: Cluster) -> dict[str, object]:
        """JSON-able, for `cluster`'s run (its alarm names filled in)."""
        return {
            "interval_seconds": self.interval_seconds,
            "checks_needed": self.checks_needed,
            "max_checks": self.max_checks,
            "namespaces": list(self.namespaces),
            "workloads": list(self.workloads),
            "alarms": [alarm_name(template, cluster) for template in self.alarms],
        }


@dataclass(frozen=True)
class Freeze:
    """A fleet-wide freeze: no disruptive work (node rolls) from `start` to `end` (aware times), for `reason`."""

    start: datetime
    end: datetime
    reason: str

    def holds(self, now: datetime) -> bool:
        """Whether the freeze is on at `now`."""
        return self.start <= now < self.end


@dataclass(frozen=True)
class Policy:
    """Waves in the order they roll out; `max_concurrency` caps every wave's concurrency; `environments` ranks
    environments for the `environment` order key (those not listed after every listed one: the safe guess);
    `health`: the gate each cluster's run passes after its update (None: none); `freezes`: the fleet's freezes
    (clm.rolling.disruption)."""

    waves: tuple[Wave, ...]
    max_concurrency: int = 3
    environments: tuple[str, ...] = DEFAULT_ENVIRONMENTS
    source: str = "built-in default"
    health: HealthGate | None = HealthGate()
    freezes: tuple[Freeze, ...] = ()
