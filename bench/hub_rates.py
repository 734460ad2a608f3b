"""Rates of what the hub did while clusters rolled: from the Step Functions histories (executions started, state
transitions, Lambda calls), the sandbox's record of AWS calls (DynamoDB requests) and the API server's audit log
(Kubernetes requests per cluster). Pure functions over timestamps (epoch seconds), and a sampler that stamps the
lines appended to a log that carries no time of its own.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from roll_history import History

_LAMBDA_ENDS = frozenset({"LambdaFunctionSucceeded", "LambdaFunctionFailed", "LambdaFunctionTimedOut"})
DYNAMODB_READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem"})
DYNAMODB_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"})


@dataclass(frozen=True)
class Rate:
    """A count over a window: its total, the most in any one second (1-s buckets from the window's start) and the
    mean per second."""

    total: float
    peak: float
    mean: float


def rate(times: Iterable[float], start: float, end: float, weights: Iterable[float] | None = None) -> Rate:
    """The rate of events at `times` (each weighing `weights`, 1 by default) within [start, end]."""
    buckets: Counter[int] = Counter()
    total = 0.0
    for at, weight in zip(times, weights or _ones(), strict=False):
        if start <= at <= end:
            buckets[int(at - start)] += weight
            total += weight
    return Rate(total, max(buckets.values(), default=0.0), total / max(end - start, 1e-9))


def _ones() -> Iterable[float]:
    while True:
        yield 1.0


def peak_concurrency(intervals: Iterable[tuple[float, float]]) -> int:
    """The most intervals [start, end) open at one instant."""
    edges = sorted((point, delta) for begin, end in intervals for point, delta in ((begin, 1), (end, -1)))
    open_now = peak = 0
    for _, delta in edges:  # at equal times an end (-1) sorts before a start: touching intervals do not overlap
        open_now += delta
        peak = max(peak, open_now)
    return peak


def epoch(value: datetime | str | float) -> float:
    """Epoch seconds of a boto3 datetime, an RFC 3339 string (audit logs) or a number."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return float(value)


@dataclass
class HistoryTimes:
    """Timestamps from execution histories: executions started (by state machine name), states entered, and the
    Lambda calls' [start, end) (Lambda tasks and lambda:invoke tasks)."""

    started: dict[str, list[float]]
    transitions: list[float]
    calls: list[tuple[float, float]]
    by_state: Counter[str]  # transitions by state name


def history_times(histories: dict[str, History]) -> HistoryTimes:
    """The timestamps of every history (execution ARN -> events)."""
    result = HistoryTimes(defaultdict(list), [], [], Counter())
    for arn, events in histories.items():
        machine = arn.split(":")[-2]
        opened: dict[int, float] = {}
        for event in events:
            kind, at = event["type"], epoch(event["timestamp"])
            if kind == "ExecutionStarted":
                result.started[machine].append(at)
            elif kind.endswith("StateEntered"):
                result.transitions.append(at)
                result.by_state[event.get("stateEnteredEventDetails", {}).get("name", "?")] += 1
            elif kind in ("LambdaFunctionStarted", "TaskStarted"):
                opened[event["id"]] = at
            elif kind in _LAMBDA_ENDS or (
                kind == "TaskSubmitted" and event["taskSubmittedEventDetails"].get("resourceType") == "lambda"
            ):
                result.calls.append((opened.get(event["previousEventId"], at), at))
    result.started = dict(result.started)
    return result


def audit_requests(lines: Iterable[str], prefix: str = "clm-") -> dict[str, list[float]]:
    """Per user whose name starts with `prefix`, the times (stageTimestamp) its requests completed."""
    times: dict[str, list[float]] = defaultdict(list)
    for line in lines:
        if not line.strip():
            continue
        event = json.loads(line)
        user = event.get("user", {}).get("username", "")
        if event.get("stage") == "ResponseComplete" and user.startswith(prefix):
            times[user.removeprefix(prefix)].append(epoch(event["stageTimestamp"]))
    return dict(times)


def dynamodb_units(
    stamped: Iterable[tuple[float, str]], read_units: float, write_units: float
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(time, action) of recorded calls -> (time, read units) and (time, write units) of the DynamoDB ones."""
    reads, writes = [], []
    for at, action in stamped:
        service, _, operation = action.partition(":")
        if service == "dynamodb" and operation in DYNAMODB_READS:
            reads.append((at, read_units))
        elif service == "dynamodb" and operation in DYNAMODB_WRITES:
            writes.append((at, write_units))
    return reads, writes


def per_node(total: float, nodes: int) -> float:
    """`total` per node rolled (NaN without nodes)."""
    return total / nodes if nodes else math.nan


class LogSampler:
    """Reads the lines appended to a JSON-lines log every `interval` seconds in a thread of its own and stamps each
    with the time it was read (the sandbox's IAM log carries no time): [(time, record)]. Resolution: `interval`."""

    def __init__(self, path: Path, interval: float = 0.5):
        self.path, self.interval = path, interval
        self.records: list[tuple[float, dict[str, Any]]] = []
        self._offset = path.stat().st_size if path.exists() else 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="hub-log-sampler", daemon=True)

    def __enter__(self) -> LogSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._read()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._read()

    def _read(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as log:
            log.seek(self._offset)
            data = log.read()
        complete = data[: data.rfind(b"\n") + 1]
        self._offset += len(complete)
        now = time.time()
        self.records.extend((now, json.loads(line)) for line in complete.decode().splitlines() if line.strip())
