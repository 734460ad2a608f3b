"""Lambda `registry_events`: registry stream records -> `Cluster Changed` events (see clm.workflow.registry_events)."""

import os
from typing import Any

from clm.aws import client
from clm.workflow.registry_events import publish, spec_changes


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Publish one event per cluster whose spec the batch changes on the bus $CLM_EVENT_BUS."""
    changes = spec_changes(event.get("Records", []))
    published = publish(client("events"), os.environ["CLM_EVENT_BUS"], changes) if changes else 0
    return {"records": len(event.get("Records", [])), "published": published}
