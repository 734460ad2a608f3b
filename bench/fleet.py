"""Fleet figures: reconcile over a registry of 1,000 clusters in moto's DynamoDB (in-process), and rendering.

    .venv/bin/python bench/fleet.py [--clusters 1000] [--sample 50] [--repeat 3] [--follow 10,50] [--run-minutes 10]

The fleet is generated from examples/clusters.yaml: ids, node pools (1 to 4 per cluster, from the example pools)
and statuses vary (most clusters up to date; some outdated, interrupted, decommission-requested, decommissioned or
blocked), every cluster in the deployment's account and region (CLM refuses others: clm.workflow.placement), and
is written through DynamoRegistry. The configuration is examples/config in a
versioned S3 bucket, as a deployment has it. Figures:

- the registry read (DynamoRegistry.list_clusters_report: a strongly consistent Scan, then validation),
  select() and the `reconcile` step as the Lambda runs it (clm.workflow.reconcile_steps: scan, configuration
  version, select, start at most CLM_MAX_RUNNING provision executions), medians of --repeat runs; the time spent
  inside moto (its request handling, slow for a 1 MB Scan) is told apart from CLM's and botocore's share;
- the read capacity one registry read consumes, computed from the stored items' sizes by DynamoDB's rules (a Scan
  sums the sizes of the items it reads, whatever the projection, and rounds each page of at most 1 MB up to 4 KB;
  1 unit per 4 KB strongly consistent). moto's own ConsumedCapacity is printed beside it: it is a constant;
- rendering a sample of clusters as the run step does it (a new Renderer, the rendering stored to S3) and with one
  Renderer for the sample (templates compiled once);
- a fleet whose every cluster needs a run, followed with --follow maxRunning values (bench/fleet_follow.py): time
  until all have started, reconcile's state transitions per cluster, no registry update lost.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import boto3
from fleet_cost import print_idle_costs
from fleet_follow import needing_a_run, simulate
from moto import mock_aws

from clm.aws import client
from clm.config.s3 import S3Source
from clm.model import Cluster, ClusterStatus, NodePool, Problem
from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.render.renderer import Renderer
from clm.version import desired_version
from clm.workflow.reconcile import select
from clm.workflow.reconcile_steps import reconcile
from clm.workflow.render_step import render_to_s3

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
REGION = "eu-central-1"
TABLE, CONFIG_BUCKET, ARTEFACT_BUCKET, PREFIX = "clm-registry", "clm-config", "clm-artefacts", "config/"
ACCOUNT = "aws:123456789012"  # moto's, the deployment's
MAX_RUNNING = 10
PAGE_BYTES = 1024 * 1024  # a Scan page reads at most 1 MB
READ_UNIT_BYTES = 4096
RECONCILES_PER_DAY = 24 * 4  # the 15-minute schedule
IDLE_FLEETS = (100, 1000)
T = TypeVar("T")


def fleet(count: int, config_version: str) -> list[Cluster]:
    """`count` clusters varied from the example registry, with a mix of statuses (deterministic)."""
    examples = load_clusters((EXAMPLES / "clusters.yaml").read_text())
    pools = [pool for cluster in examples for pool in cluster.node_pools]
    return [_status(_cluster(examples[i % len(examples)], pools, i), i, config_version) for i in range(count)]


def _cluster(template: Cluster, pools: list[NodePool], i: int) -> Cluster:
    account, region = ACCOUNT, REGION
    local_id = f"bench-{i:04d}"
    node_pools = [
        dataclasses.replace(
            pools[(i + k) % len(pools)],
            name=f"pool-{k}",
            min_size=k + i % 3,
            max_size=k + i % 3 + 4,
            config_items=dict(pools[(i + k) % len(pools)].config_items),
        )
        for k in range(1 + i % 4)
    ]
    return dataclasses.replace(
        template,
        id=f"{account}:{region}:{local_id}",
        local_id=local_id,
        alias=f"team-{i % 40}-{local_id}",
        api_server_url=f"https://{local_id}.{region}.example.org",
        infrastructure_account=account,
        region=region,
        config_items={**template.config_items, "team": f"team-{i % 40}", "cost_center": f"cc-{1000 + i % 90}"},
        node_pools=node_pools,
        status=ClusterStatus(),
    )


def _status(cluster: Cluster, i: int, config_version: str) -> Cluster:
    """Per 100 clusters: 2 decommissioned, 3 decommission-requested, 5 interrupted, 20 outdated, 2 blocked."""
    current = str(desired_version(cluster, config_version))
    older = str(desired_version(cluster, "previous-config"))
    problems = [Problem(title=f"stack update failed ({n})", detail="UPDATE_ROLLBACK_COMPLETE") for n in range(3)]
    slot = i % 100
    if slot < 2:
        return dataclasses.replace(cluster, lifecycle_status="decommissioned")
    if slot < 5:
        return dataclasses.replace(
            cluster, lifecycle_status="decommission-requested", status=ClusterStatus(current_version=older)
        )
    if slot < 10:
        return dataclasses.replace(
            cluster, status=ClusterStatus(current_version=older, next_version=current, problems=problems)
        )
    if slot < 30:
        return dataclasses.replace(cluster, status=ClusterStatus(current_version=older, last_version=older))
    if slot < 32:
        return dataclasses.replace(cluster, config_items={**cluster.config_items, "cluster_update_block": "freeze"})
    return dataclasses.replace(cluster, status=ClusterStatus(current_version=current, last_version=older))


def attribute_size(value: dict[str, Any]) -> int:
    """Size in bytes of one DynamoDB attribute value (typed JSON) by DynamoDB's published rules."""
    [(kind, data)] = value.items()
    if kind == "S":
        return len(data.encode())
    if kind == "N":
        digits = data.lstrip("-").replace(".", "").strip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(key.encode()) + attribute_size(item) + 1 for key, item in data.items())
    if kind == "L":
        return 3 + sum(attribute_size(item) + 1 for item in data)
    if kind in ("SS", "NS", "BS"):
        return sum(attribute_size({kind[0]: item}) for item in data)
    raise ValueError(f"unknown DynamoDB type {kind!r}")


def item_size(item: dict[str, Any]) -> int:
    """Size in bytes of a stored item: attribute names plus values."""
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


def scan_read_units(sizes: list[int], consistent: bool = True) -> float:
    """Read capacity of a Scan over items of these sizes: pages of at most 1 MB, each rounded up to 4 KB."""
    units, page = 0, 0
    for size in sizes:
        if page and page + size > PAGE_BYTES:
            units += math.ceil(page / READ_UNIT_BYTES)
            page = 0
        page += size
    units += math.ceil(page / READ_UNIT_BYTES)
    return units if consistent else units / 2


def timed(function: Callable[[], T], repeat: int, moto: MotoTime | None = None) -> tuple[str, T]:
    """Run `function` `repeat` times (at least once): the median time, split into moto's and CLM's shares when
    `moto` watches the clients, and the last result."""
    totals, in_moto = [], []
    for _ in range(max(1, repeat)):
        before = moto.seconds if moto else 0.0
        start = time.perf_counter()
        result = function()
        totals.append(time.perf_counter() - start)
        in_moto.append(moto.seconds - before if moto else 0.0)
    total = statistics.median(totals) * 1000
    if not moto:
        return f"{total:.1f} ms", result
    own = statistics.median(t - m for t, m in zip(totals, in_moto, strict=True)) * 1000
    return f"{total:.0f} ms ({statistics.median(in_moto) * 1000:.0f} ms in moto, {own:.0f} ms CLM and botocore)", result


class MotoTime:
    """Seconds that clients spend inside moto (its handling of each request), to tell CLM's own share apart.

    moto answers in botocore's `before-send` event; handlers registered first and last bracket it.
    """

    def __init__(self, clients: list[Any]):
        self.seconds = 0.0
        self._entered = 0.0
        for watched in clients:
            watched.meta.events.register_first("before-send", self._enter)
            watched.meta.events.register_last("before-send", self._leave)

    def _enter(self, **_: Any) -> None:
        self._entered = time.perf_counter()

    def _leave(self, **_: Any) -> None:
        self.seconds += time.perf_counter() - self._entered


class ScanMeter:
    """Counts the Scan calls of a DynamoDB client and asks each for moto's ConsumedCapacity."""

    def __init__(self, client: Any):
        self.calls = 0
        self.reported_units = 0.0
        client.meta.events.register("provide-client-params.dynamodb.Scan", self._ask)
        client.meta.events.register("after-call.dynamodb.Scan", self._count)

    def _ask(self, params: dict[str, Any], **_: Any) -> None:
        params["ReturnConsumedCapacity"] = "TOTAL"

    def _count(self, parsed: dict[str, Any], **_: Any) -> None:
        self.calls += 1
        self.reported_units += parsed.get("ConsumedCapacity", {}).get("CapacityUnits", 0.0)


# The figures are reconcile's following and start order, not a rollout's pace (docs/rollouts.md): one wave takes
# every cluster, the most critical first (reconcile's own order), `clm:maxRunning` bounding the starts.
ONE_WAVE = "max_concurrency: 1000\nwaves:\n  - {name: fleet, concurrency: 100%, order: [-criticality]}\n"


def upload_config(s3: Any) -> None:
    """examples/config into a versioned bucket under PREFIX, with the rollout policy ONE_WAVE."""
    s3.create_bucket(Bucket=CONFIG_BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_versioning(Bucket=CONFIG_BUCKET, VersioningConfiguration={"Status": "Enabled"})
    source = EXAMPLES / "config"
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        s3.put_object(Bucket=CONFIG_BUCKET, Key=PREFIX + path.relative_to(source).as_posix(), Body=path.read_bytes())
    s3.put_object(Bucket=CONFIG_BUCKET, Key=PREFIX + "cluster/rollout.yaml", Body=ONE_WAVE.encode())


def deployment(session: boto3.Session) -> str:
    """Buckets, registry table and a provision state machine in moto, and the reconcile function's environment.

    Returns the configuration version.
    """
    s3 = session.client("s3")
    upload_config(s3)
    s3.create_bucket(Bucket=ARTEFACT_BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    create_table(session.client("dynamodb"), TABLE)
    machine = session.client("stepfunctions").create_state_machine(
        name="clm-provision",
        definition='{"StartAt": "Run", "States": {"Run": {"Type": "Pass", "End": true}}}',
        roleArn="arn:aws:iam::123456789012:role/clm-provision",
    )["stateMachineArn"]
    os.environ.update(
        {
            "CLM_REGISTRY_TABLE": TABLE,
            "CLM_CONFIG_SOURCE": f"s3://{CONFIG_BUCKET}/{PREFIX}",
            "CLM_ARTEFACT_BUCKET": ARTEFACT_BUCKET,
            "CLM_PROVISION_STATE_MACHINE": machine,
            "CLM_MAX_RUNNING": str(MAX_RUNNING),
        }
    )
    return S3Source(s3, CONFIG_BUCKET, PREFIX).version()


def registry_figures(session: boto3.Session, clusters: list[Cluster], repeat: int) -> tuple[list[Cluster], list[int]]:
    """Write the fleet, then time and size the registry read; returns the clusters as read and the items' sizes."""
    dynamodb = session.client("dynamodb")
    registry = DynamoRegistry(dynamodb, TABLE)
    start = time.perf_counter()
    for cluster in clusters:
        registry.put(cluster)
    written = time.perf_counter() - start
    items = [item for page in dynamodb.get_paginator("scan").paginate(TableName=TABLE) for item in page["Items"]]
    sizes = [item_size(item) for item in items]
    meter = ScanMeter(dynamodb)
    took, (read, invalid) = timed(registry.list_clusters_report, repeat, MotoTime([dynamodb]))
    units = scan_read_units(sizes)
    print(
        f"registry: {len(read)} clusters ({len(invalid)} invalid), "
        f"{sum(len(c.node_pools) for c in read)} node pools; written in {written:.1f} s (moto in-process)"
    )
    print(f"  item size: mean {statistics.mean(sizes):.0f} B, max {max(sizes)} B; table {sum(sizes) / 1024:.0f} KiB")
    print(f"  read (scan + validation, median): {took}; {meter.calls // max(1, repeat)} Scan call(s)")
    print(
        f"  read capacity per read: {units:.0f} RCU computed from item sizes (strongly consistent; "
        f"{units / 2:.0f} if eventually consistent); moto reported {meter.reported_units / max(1, repeat):g}"
    )
    print(f"  per day at one reconcile every 15 minutes: {units * RECONCILES_PER_DAY:,.0f} read request units")
    return read, sizes


def reconcile_figures(clusters: list[Cluster], config_version: str, repeat: int) -> float:
    """select() over the fleet and the reconcile step as the Lambda runs it (first run, then later runs); returns
    the seconds of a later run outside moto."""
    now = time.time()
    took, selected = timed(lambda: select(clusters, config_version, now), repeat)
    reasons = Counter(selection.reason for selection in selected)
    print(
        f"select() over {len(clusters)} clusters (median): {took}; {len(selected)} selected "
        f"({', '.join(f'{count} {reason}' for reason, count in reasons.items())})"
    )
    moto = MotoTime([client(service) for service in ("dynamodb", "s3", "stepfunctions")])
    own = 0.0
    for label, runs in (("first run", 1), ("later runs (median)", repeat)):
        in_moto, started = moto.seconds, time.perf_counter()
        took, result = timed(lambda: reconcile({}), runs, moto)
        own = (time.perf_counter() - started - (moto.seconds - in_moto)) / max(1, runs)
        counts = ", ".join(
            f"{key.replace('_', ' ')} {result[key]['count']}" for key in ("started", "already_started", "deferred")
        )
        print(f"reconcile step, {label}: {took}; {counts}")
    return own


def render_figures(session: boto3.Session, clusters: list[Cluster], sample: int) -> None:
    """Render a sample spread over the fleet as the run step does, then with one shared Renderer."""
    s3 = session.client("s3")
    tree = S3Source(s3, CONFIG_BUCKET, PREFIX).fetch()
    chosen = [c for c in clusters if c.lifecycle_status != "decommissioned"][:: max(1, len(clusters) // sample)][
        :sample
    ]
    start = time.perf_counter()
    objects = sum(render_to_s3(s3, ARTEFACT_BUCKET, tree, cluster)["manifests"] for cluster in chosen)
    step = time.perf_counter() - start
    renderer = Renderer(tree)
    start = time.perf_counter()
    for cluster in chosen:
        renderer.render(cluster)
    shared = time.perf_counter() - start
    pools = sum(len(c.node_pools) for c in chosen)
    print(f"render {len(chosen)} clusters ({pools} node-pool stacks, {objects} objects):")
    print(
        f"  as the run step (new Renderer, stored to S3): {len(chosen) / step:.1f} clusters/s, "
        f"{step / len(chosen) * 1000:.1f} ms per cluster"
    )
    print(
        f"  one Renderer for all: {len(chosen) / shared:.1f} clusters/s, {shared / len(chosen) * 1000:.1f} ms per "
        f"cluster"
    )


def fake_aws_environment() -> None:
    """Never reach a real AWS account: fake credentials, no endpoint or profile from the shell."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        os.environ.pop(name, None)
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        }
    )


def main() -> None:
    """Build the fleet in moto and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=50, help="clusters to render")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each timed reconcile figure")
    parser.add_argument("--follow", default="10,50", help="maxRunning values to follow a fleet needing runs with")
    parser.add_argument("--run-minutes", type=float, default=10.0, help="how long each provision run takes")
    args = parser.parse_args()
    fake_aws_environment()
    started = time.perf_counter()
    with mock_aws():
        session = boto3.Session(region_name=REGION)
        config_version = deployment(session)
        clusters, sizes = registry_figures(session, fleet(args.clusters, config_version), args.repeat)
        seconds = reconcile_figures(clusters, config_version, args.repeat)
        units_of = {n: scan_read_units(sizes[:n]) for n in IDLE_FLEETS if n <= len(sizes)}
        print_idle_costs(units_of, seconds / len(clusters), len(list((EXAMPLES / "config").rglob("*.yaml"))))
        render_figures(session, clusters, args.sample)
        for max_running in (int(value) for value in args.follow.split(",") if value):
            simulate(
                session,
                needing_a_run(fleet(args.clusters, config_version)),
                config_version,
                max_running,
                args.run_minutes,
            )
    print(f"bench time: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
