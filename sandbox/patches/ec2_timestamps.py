"""EC2's timestamps carry their milliseconds.

moto 5.2.5 writes every EC2 timestamp zeroed to the second (``…:52.000Z``), as EC2 writes an instance's
LaunchTime. The sandbox's node simulator times a node's boot from its instance's launch: from whole seconds it can
only estimate the launch by when it noticed the instance, up to a poll late (clm_sandbox.nodesim.model.started_at).
Here the milliseconds moto knows are written (``…:52.371Z``), a form EC2 writes too (a volume's CreateTime) and every
client parses.
"""

from __future__ import annotations

from datetime import datetime

from clm_sandbox.patches._patching import replace

MILLISECONDS = "iso8601_millis"  # a timestamp format of moto's serializer, EC2's alone


def install() -> None:
    """Write EC2's timestamps to the millisecond (idempotent); other services keep theirs (S3's LastModified)."""
    from moto.core.serialize import EC2Serializer, TimestampSerializer

    replace(TimestampSerializer, f"_timestamp_{MILLISECONDS}", _to_the_millisecond)
    replace(EC2Serializer, "DEFAULT_TIMESTAMP_FORMAT", MILLISECONDS)


def _to_the_millisecond(self: object, value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
