"""The roll's cost per node and a provision run's that changes nothing, at list prices (bench/prices.py).

Step Functions transitions and Lambda calls (with each call's duration and its function's memory) come from the
execution histories of the run and its children; DynamoDB and S3 requests from the calls the sandbox judged
(its IAM log, $CLM_SANDBOX_IAM_LOG, between two offsets: every AWS call of the functions, of CloudFormation and of
Step Functions in that time, the triggering reconcile's included).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from cost import Usage, add, lambda_usage, recorded_actions, request_usage
from roll_history import run_histories, trace
from roll_sandbox import RollSandbox

from clm_sandbox.demo.report import run_figures

IAM_LOG = "iam-calls.jsonl"
NOTES = "cluster/NOTES.md"  # under cluster/, the part of the config CLM versions; no template reads it


def iam_log(logs: Path) -> Path:
    """Where the bench's moto server appends its judged calls."""
    return logs / IAM_LOG


def log_offset(logs: Path) -> int:
    """The IAM log's size now: calls after it belong to what follows."""
    return iam_log(logs).stat().st_size if iam_log(logs).exists() else 0


def registry_units(sandbox: RollSandbox) -> tuple[int, int]:
    """Read and write units of one request on the cluster's registry item (its JSON size: a slight over-estimate)."""
    table = sandbox.outputs["RegistryTableName"]
    item = sandbox.client("dynamodb").get_item(TableName=table, Key={"id": {"S": sandbox.cluster.id}})["Item"]
    size = len(json.dumps(item))
    return math.ceil(size / 4096), math.ceil(size / 1024)


def run_usage(sandbox: RollSandbox, arn: str, logs: Path, offset: int) -> Usage:
    """The billable units of the run `arn` (and its children) and of the AWS calls recorded after `offset`."""
    sfn = sandbox.client("stepfunctions")
    calls = trace(run_histories(sfn, arn)).calls
    actions, _ = recorded_actions(iam_log(logs), offset)
    usage = add(lambda_usage((c.step, c.seconds) for c in calls), request_usage(actions, *registry_units(sandbox)))
    usage.transitions = run_figures(sfn, arn).transitions
    return usage


def no_change_run(sandbox: RollSandbox, logs: Path) -> Usage:
    """Upload a file no template reads: the configuration's version changes, so reconcile starts a provision run
    that renders, finds every stack and manifest unchanged and no node outdated; its units."""
    offset = log_offset(logs)
    s3, bucket = sandbox.client("s3"), sandbox.outputs["ConfigBucketName"]
    run = sandbox.run(lambda: s3.put_object(Bucket=bucket, Key=f"config/{NOTES}", Body=b"notes\n"))
    return run_usage(sandbox, run.arn, logs, offset)
