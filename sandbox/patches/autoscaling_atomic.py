"""Auto Scaling calls are atomic, as on AWS: one at a time in the process.

moto 5.2.5 terminates an instance by finding it among the groups' instances, detaching it (the group's instance
list rebuilt, a replacement launched) and terminating it, with nothing held: a batch's terminations at once (the
sandbox's in-process Lambda containers) found an instance another call had just taken out of the list
(StopIteration: a 500 without a body), and the IAM judge, reading the groups meanwhile, could not name the
instance's group (bench/roll.py, 200 nodes in batches of 20).
"""

from __future__ import annotations

import inspect
import threading

from clm_sandbox.patches._patching import serialize

# Held by every public method of moto's AutoScalingBackend, and by the IAM judge's look-ups of groups.
LOCK = threading.RLock()


def install() -> None:
    """Serialize moto's Auto Scaling backend calls in this process (idempotent)."""
    from moto.autoscaling.models import AutoScalingBackend

    for name, value in list(vars(AutoScalingBackend).items()):
        if inspect.isfunction(value) and not name.startswith("_"):
            serialize(AutoScalingBackend, name, LOCK)
