"""What IAM sees of existing resources, read from moto's backends: full ARNs and tags (``aws:ResourceTag``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Found:
    """An existing resource: its ARN and tags (empty when it does not exist)."""

    arn: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


def stack(account: str, region: str, name_or_arn: str) -> Found:
    """The live CloudFormation stack of that name (or ARN)."""
    from moto.cloudformation.models import cloudformation_backends

    stacks = cloudformation_backends[account][region].stacks.values()
    for candidate in stacks:
        if name_or_arn in (candidate.stack_id, candidate.name) and candidate.status != "DELETE_COMPLETE":
            return Found(candidate.stack_id, dict(candidate.tags or {}))
    return Found()


def auto_scaling_group(account: str, region: str, name: str | None, instance_id: str | None = None) -> Found:
    """The auto scaling group of that name, or the one holding ``instance_id``."""
    from moto.autoscaling.models import autoscaling_backends

    groups = autoscaling_backends[account][region].autoscaling_groups.values()
    for group in groups:
        holds = instance_id is not None and any(s.instance.id == instance_id for s in group.instance_states)
        if group.name == name or holds:
            return Found(group.arn, {tag["Key"]: tag["Value"] for tag in group.tags or []})
    return Found()


def secret(account: str, region: str, name_or_arn: str) -> Found:
    """The Secrets Manager secret of that name (or ARN), with its random ARN suffix."""
    from moto.secretsmanager.models import secretsmanager_backends

    backend: Any = secretsmanager_backends[account][region]
    for candidate in backend.secrets.values():
        if name_or_arn in (candidate.arn, candidate.name):
            return Found(candidate.arn, {t["Key"]: t["Value"] for t in candidate.tags or []})
    return Found()


def ec2_tagged(account: str, region: str, resource_id: str) -> Found:
    """An EC2 resource's tags (a network interface, a volume), by its id."""
    from moto.ec2.models import ec2_backends

    tags = ec2_backends[account][region].describe_tags(filters={"resource-id": [resource_id]})
    return Found(resource_id, {tag["key"]: tag["value"] for tag in tags})
