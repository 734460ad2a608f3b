"""DynamoDB item operations are atomic, as on AWS: one at a time in the process, each with its response.

moto 5.2.5 checks a write's condition and then applies the write, with nothing in between held: two threads (the
sandbox's in-process Lambda containers) could both pass `attribute_not_exists(#lock)`, so both runs of a cluster
took its lock and both worked (ci15). A read renders the live item after the backend returns it: a write in another
thread changed its attributes mid-iteration ("dictionary changed size during iteration", stop 38's fresh clone).
"""

from __future__ import annotations

import threading

from clm_sandbox.patches._patching import serialize

WRITES = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")
READS = ("get_item", "query", "scan", "batch_get_item", "transact_get_items")
_items = threading.RLock()


def install() -> None:
    """Serialize moto's DynamoDB item requests, reads with writes, in this process (idempotent)."""
    from moto.dynamodb.responses import DynamoHandler

    for name in WRITES + READS:
        serialize(DynamoHandler, name, _items)
