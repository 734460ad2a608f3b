"""Putting CLM's events on its EventBridge bus, in batches of EventBridge's limit."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

EVENT_BUS_ENV = "CLM_EVENT_BUS"  # the name of CLM's bus, in the environment of the functions that publish
PUT_EVENTS_BATCH = 10  # EventBridge's limit of entries per PutEvents call


def put_events(
    client: Any, bus: str, source: str, events: Sequence[tuple[str, dict[str, Any]]]
) -> list[tuple[int, str]]:
    """Put `(detail type, detail)` events from `source` on `bus` (a boto3 EventBridge client); returns the index and
    error of each event EventBridge refused."""
    entries = [
        {"Source": source, "DetailType": kind, "Detail": json.dumps(detail), "EventBusName": bus}
        for kind, detail in events
    ]
    refused: list[tuple[int, str]] = []
    for start in range(0, len(entries), PUT_EVENTS_BATCH):
        response = client.put_events(Entries=entries[start : start + PUT_EVENTS_BATCH])
        for index, result in enumerate(response.get("Entries", []), start):
            if result.get("ErrorCode"):
                refused.append((index, f"{result['ErrorCode']}: {result.get('ErrorMessage', '')}"))
    return refused
