"""What a measured workload costs at list prices (bench/prices.py), by service."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path

import prices

# Memory (GB) of CLM's functions as infra/functions.py deploys them (a unit test holds them equal; importing the CDK
# app here would cost seconds).
FUNCTION_GB = {"run": 0.25, "stacks": 0.25, "kube": 0.5, "roll": 0.5, "reconcile": 0.25, "registry_events": 0.25}
S3_PUT_LIST_ACTIONS = ("s3:PutObject", "s3:CopyObject", "s3:ListBucket", "s3:ListBucketVersions")


@dataclass
class Usage:
    """Billable units of a workload."""

    transitions: float = 0.0
    lambda_gb_seconds: float = 0.0
    lambda_requests: float = 0.0
    dynamodb_read_units: float = 0.0
    dynamodb_write_units: float = 0.0
    s3_put_list: float = 0.0
    s3_get_other: float = 0.0

    def scaled(self, factor: float) -> Usage:
        """Every unit times `factor` (per node, per month, ...)."""
        return Usage(*(getattr(self, f.name) * factor for f in fields(self)))

    def dollars(self) -> dict[str, float]:
        """Cost by service, and the total."""
        cost = {
            "Step Functions": self.transitions * prices.STATE_TRANSITION,
            "Lambda": self.lambda_gb_seconds * prices.LAMBDA_GB_SECOND + self.lambda_requests * prices.LAMBDA_REQUEST,
            "DynamoDB": self.dynamodb_read_units * prices.DYNAMODB_READ_UNIT
            + self.dynamodb_write_units * prices.DYNAMODB_WRITE_UNIT,
            "S3": self.s3_put_list * prices.S3_PUT_LIST + self.s3_get_other * prices.S3_GET_OTHER,
        }
        return {**cost, "total": sum(cost.values())}

    def line(self) -> str:
        """`$total (Step Functions $x, Lambda $y, ...)` with the units."""
        cost = self.dollars()
        parts = ", ".join(f"{service} ${value:.6f}" for service, value in cost.items() if service != "total")
        return (
            f"${cost['total']:.6f} ({parts}; {self.transitions:.1f} transitions, {self.lambda_requests:.1f} Lambda "
            f"calls, {self.lambda_gb_seconds:.2f} GB-s, {self.dynamodb_read_units:.1f} RRU, "
            f"{self.dynamodb_write_units:.1f} WRU, {self.s3_put_list:.1f} S3 PUT/LIST, {self.s3_get_other:.1f} S3 GET)"
        )


def function_of_step(step: str) -> str:
    """The function that serves a workflow step (steps are unique across functions)."""
    from clm.workflow import kube_steps, reconcile_steps, roll_steps, run_steps, stack_steps

    for function, module in (
        ("roll", roll_steps),
        ("run", run_steps),
        ("stacks", stack_steps),
        ("kube", kube_steps),
        ("reconcile", reconcile_steps),
    ):
        if step in module.STEPS:
            return function
    raise KeyError(f"no function serves the step {step!r}")


def lambda_usage(calls: Iterable[tuple[str, float]]) -> Usage:
    """(step, seconds) of Lambda calls -> GB-seconds (billed by the millisecond) and requests."""
    usage = Usage()
    for step, seconds in calls:
        usage.lambda_requests += 1
        usage.lambda_gb_seconds += FUNCTION_GB[function_of_step(step)] * round(seconds, 3)
    return usage


def request_usage(actions: Counter[str], read_units: float = 1.0, write_units: float = 1.0) -> Usage:
    """DynamoDB and S3 requests from the actions the sandbox recorded (each judged call is one request); a DynamoDB
    read costs `read_units`, a write `write_units` (per 4 KB read strongly consistent, per 1 KB written)."""
    usage = Usage()
    for action, count in actions.items():
        service, operation = action.split(":", 1)
        if service == "dynamodb" and operation in {"GetItem", "Query", "Scan", "BatchGetItem"}:
            usage.dynamodb_read_units += count * read_units
        elif service == "dynamodb" and operation in {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"}:
            usage.dynamodb_write_units += count * write_units
        elif action in S3_PUT_LIST_ACTIONS:
            usage.s3_put_list += count
        elif service == "s3":
            usage.s3_get_other += count
    return usage


def recorded_actions(log: Path, offset: int) -> tuple[Counter[str], int]:
    """The actions judged in the sandbox's IAM log ($CLM_SANDBOX_IAM_LOG) after byte `offset`, and the new offset."""
    if not log.exists():
        return Counter(), offset
    with log.open("rb") as file:
        file.seek(offset)
        data = file.read()
    actions = Counter(json.loads(line)["action"] for line in data.decode().splitlines() if line.strip())
    return actions, offset + len(data)


def add(*usages: Usage) -> Usage:
    """The sum of `usages`."""
    return Usage(*(sum(getattr(u, f.name) for u in usages) for f in fields(Usage)))
