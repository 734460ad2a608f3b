"""DynamoDB writes are atomic, as on AWS: one at a time in the process.

moto 5.2.5 checks a write's condition and then applies the write, with nothing in between held: two threads (the
sandbox's in-process Lambda containers) could both pass `attribute_not_exists(#lock)`, so both runs of a cluster
took its lock and both worked (ci15: test_faults' racing executions at the cluster's registration).
"""

from __future__ import annotations

import threading

from clm_sandbox.patches._patching import serialize

WRITES = ("put_item", "update_item", "delete_item", "transact_write_items")
_writing = threading.RLock()


def install() -> None:
    """Serialize moto's DynamoDB item writes in this process (idempotent)."""
    from moto.dynamodb.models import DynamoDBBackend

    for name in WRITES:
        serialize(DynamoDBBackend, name, _writing)
