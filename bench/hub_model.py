"""How many clusters can roll at once before a regional quota of the hub throttles: each quota divided by what one
rolling cluster asks of it, measured on the sandbox (bench/hub_scale.py).

Quotas (defaults, per account and region; each can be raised):

- Step Functions, Standard workflows (awsdocs/aws-step-functions-developer-guide, doc_source/limits-overview.md,
  "Quotas Related to API Action Throttling" and "Quotas Related to State Throttling"; live page
  https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html): StartExecution a token bucket of
  1,300 refilled at 300/s in us-east-1, us-west-2 and eu-west-1, 800 and 150/s elsewhere; StateTransition 5,000
  refilled at 1,500/s there, 800 and 500/s elsewhere (AWS may raise them at any time: the model takes them as
  parameters);
- Lambda: 1,000 concurrent executions per region, shared by every function
  (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html); CLM sets no reserved concurrency;
- DynamoDB on-demand: 40,000 read and 40,000 write request units per second per table
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html); one item (a cluster's
  registry entry) lives in one partition, 3,000 read and 1,000 write units per second, far above one cluster's use;
- Kubernetes: each cluster has its own API server (on EKS scaled by AWS; kube-apiserver's default
  --max-requests-inflight 400 and --max-mutating-requests-inflight 200), and CLM's client has no client-side
  rate limit: the load on it depends on the cluster's own roll (its batch), not on how many clusters roll.

The per-cluster demand measured on the sandbox is an upper bound of the real one: the sandbox compresses a node's
boot and drain into seconds, so the work per node (transitions, Lambda calls, registry requests) comes faster than
on AWS, where an instance boots in minutes; polling loops ask at the same pace on both. The clusters at which a
quota binds are therefore a lower bound, and the first of them the safe `clm:maxRunning` (reconcile's cap on
running provision runs; a rollout policy's `max_concurrency` caps a configuration rollout below it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SFN_QUOTAS = "doc_source/limits-overview.md of awsdocs/aws-step-functions-developer-guide"
LARGE_REGIONS = ("us-east-1", "us-west-2", "eu-west-1")
# A run starts its executions one after another, its steps between them (provision; after the stack steps, each
# pool's roll-node-pool; a hand-over every clm:rollStepsPerExecution steps): clusters whose runs start together
# (reconcile starts them in one call) take one token each from the StartExecution bucket, then refill it slowly.
STARTS_TOGETHER = 1.0


@dataclass(frozen=True)
class Quota:
    """A regional quota: `limit` per second (a token bucket's refill) or at once, `bucket` a bucket's size."""

    name: str
    limit: float
    unit: str
    bucket: float | None = None


@dataclass(frozen=True)
class Demand:
    """What one rolling cluster asks of the hub: executions it starts in one burst (STARTS_TOGETHER), and mean rates
    while it rolls (per second; Lambda: concurrent calls)."""

    start_burst: float
    transitions: float
    lambda_concurrency: float
    read_units: float
    write_units: float


@dataclass(frozen=True)
class Binding:
    """A quota, one rolling cluster's demand on it, and the clusters rolling at once at which it binds."""

    quota: Quota
    per_cluster: float
    clusters: float

    @property
    def capacity(self) -> float:
        """What the demand is compared with: a StartExecution bucket (runs start in a burst), else the limit."""
        return (
            self.quota.bucket if self.quota.name.endswith("StartExecution") and self.quota.bucket else self.quota.limit
        )


def quotas(region: str) -> list[Quota]:
    """The default quotas of a region that bear on rolling clusters."""
    large = region in LARGE_REGIONS
    return [
        Quota("Step Functions StartExecution", 300 if large else 150, "/s", 1300 if large else 800),
        Quota("Step Functions StateTransition", 1500 if large else 500, "/s", 5000 if large else 800),
        Quota("Lambda concurrent executions", 1000, "at once"),
        Quota("DynamoDB read request units (table)", 40000, "/s"),
        Quota("DynamoDB write request units (table)", 40000, "/s"),
    ]


def bindings(demand: Demand, region_quotas: list[Quota]) -> list[Binding]:
    """Each quota with the clusters rolling at once at which it binds, the first to bind first. StartExecution
    binds when the runs' starts together empty its bucket; the others when the summed demand reaches the limit."""
    per_cluster = {
        "Step Functions StartExecution": demand.start_burst,
        "Step Functions StateTransition": demand.transitions,
        "Lambda concurrent executions": demand.lambda_concurrency,
        "DynamoDB read request units (table)": demand.read_units,
        "DynamoDB write request units (table)": demand.write_units,
    }
    found = []
    for quota in region_quotas:
        asked = per_cluster[quota.name]
        unbound = Binding(quota, asked, math.inf)
        found.append(Binding(quota, asked, unbound.capacity / asked) if asked > 0 else unbound)
    return sorted(found, key=lambda binding: binding.clusters)


def aligned_clusters(quota: Quota, busiest: float) -> float:
    """Clusters whose busiest seconds (`busiest` each) a token bucket absorbs when they all come in the same second:
    the bucket, full, plus that second's refill."""
    return ((quota.bucket or 0.0) + quota.limit) / busiest if busiest > 0 else math.inf


def safe_max_running(found: list[Binding], clusters: int) -> int:
    """The largest `clm:maxRunning` under which no quota binds, for a fleet of `clusters` (at least 1)."""
    return max(1, min(clusters, math.floor(min(b.clusters for b in found))))


def fleet_hours(clusters: int, nodes: int, at_once: int, node_seconds: float, run_overhead: float) -> float:
    """Hours to roll `clusters` pools of `nodes` nodes, `at_once` clusters at a time, each node `node_seconds`
    (one at a time) and each run `run_overhead` seconds beside its nodes."""
    rounds = math.ceil(clusters / max(1, at_once))
    return rounds * (run_overhead + nodes * node_seconds) / 3600
