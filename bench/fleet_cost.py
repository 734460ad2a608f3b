"""What an idle fleet costs a month at list prices (bench/prices.py): the 15-minute schedule's reconcile only.

An idle cluster (up to date) is never given a provision run: each schedule tick is one reconcile execution that
scans the registry, reads the configuration's version and starts nothing. Per execution: 4 state transitions
(Settle, Reconcile, FollowUp, Done), one Lambda call of the reconcile function (its duration as measured outside
moto: CLM and botocore; AWS's own latency would add to it), one strongly consistent Scan of the registry (read
units from the items' sizes), and for an S3 configuration one GetBucketVersioning and one ListObjectVersions page
per 1,000 objects.
"""

from __future__ import annotations

import math

import prices
from cost import FUNCTION_GB, Usage

TICKS_PER_MONTH = 4 * 24 * 30
TRANSITIONS_PER_TICK = 4


def idle_month(read_units: float, lambda_seconds: float, config_objects: int) -> Usage:
    """One month of schedule ticks for a registry read with `read_units` and a reconcile call of `lambda_seconds`."""
    tick = Usage(
        transitions=TRANSITIONS_PER_TICK,
        lambda_gb_seconds=FUNCTION_GB["reconcile"] * round(lambda_seconds, 3),
        lambda_requests=1,
        dynamodb_read_units=read_units,
        s3_put_list=math.ceil(max(config_objects, 1) / 1000),
        s3_get_other=1,
    )
    return tick.scaled(TICKS_PER_MONTH)


def print_idle_costs(units_of: dict[int, float], seconds_per_cluster: float, config_objects: int) -> None:
    """Per fleet size (clusters -> read units of its Scan), the month's cost; the reconcile call's duration scales
    with the fleet (`seconds_per_cluster`, measured)."""
    print(f"idle fleet, per month ({TICKS_PER_MONTH} schedule ticks; {prices.REGION} list prices of {prices.AS_OF}):")
    for clusters, units in sorted(units_of.items()):
        month = idle_month(units, seconds_per_cluster * clusters, config_objects)
        print(f"  {clusters:5d} clusters: {month.line()}; ${month.dollars()['total'] / clusters:.5f} per cluster")
