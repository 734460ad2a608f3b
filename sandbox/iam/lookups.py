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

    from clm_sandbox.patches.autoscaling_atomic import LOCK

    with LOCK:  # not while a call rebuilds a group's instances
        groups = list(autoscaling_backends[account][region].autoscaling_groups.values())
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


def kms_key_id(account: str, region: str, key: str) -> str | None:
    """The raw id of a KMS key named by id, key ARN, alias or alias ARN (None if the alias is unknown)."""
    from moto.kms.models import kms_backends

    try:
        return kms_backends[account][region].any_id_to_key_id(key) or None
    except Exception:
        return None


def kms_key(account: str, region: str, key_id: str) -> Found:
    """The KMS key of that id, with its tags."""
    from moto.kms.models import kms_backends

    backend: Any = kms_backends[account][region]
    if key_id not in backend.keys:
        return Found()
    tags = backend.list_resource_tags(key_id).get("Tags") or []
    return Found(backend.keys[key_id].arn, {tag["TagKey"]: tag["TagValue"] for tag in tags})


def ciphertext_key_id(blob: bytes) -> str | None:
    """The id of the key that made a moto KMS ciphertext (moto's own blob layout; AWS's names the key too)."""
    from moto.kms.utils import _deserialize_ciphertext_blob

    try:
        return _deserialize_ciphertext_blob(blob).key_id
    except Exception:
        return None


def bucket_account(bucket: str) -> str | None:
    """The account that owns the bucket of that name (bucket names are global), None if no account has it."""
    from moto.s3.models import s3_backends

    owner = s3_backends.bucket_accounts.get(bucket)
    return owner[1] if owner else None


def bucket_kms_key(account: str, bucket: str) -> str | None:
    """The KMS key (as the bucket's encryption names it) of a bucket encrypted with SSE-KMS by default."""
    from moto.s3.models import s3_backends

    found = s3_backends[account]["aws"].buckets.get(bucket)
    rule = ((found.encryption or {}).get("Rule") or {}) if found is not None else {}
    default = rule.get("ApplyServerSideEncryptionByDefault") or {}
    return default.get("KMSMasterKeyID") if default.get("SSEAlgorithm") == "aws:kms" else None


@dataclass(frozen=True)
class Role:
    """An existing IAM role as IAM judges calls on it: its ARN (with its path) and its permissions boundary."""

    arn: str
    boundary: str | None = None


def role(account: str, name_or_arn: str) -> Role:
    """The role of that name or ARN; a role that does not exist is named at the root path, without a boundary."""
    from moto.iam.models import iam_backends

    for candidate in iam_backends[account]["aws"].roles.values():
        if name_or_arn in (candidate.name, candidate.arn):
            return Role(candidate.arn, candidate.permissions_boundary_arn or None)
    if name_or_arn.startswith("arn:"):
        return Role(name_or_arn)
    return Role(f"arn:aws:iam::{account}:role/{name_or_arn}")


def instance_profile_roles(account: str, name_or_arn: str) -> list[str]:
    """The ARNs of the roles in the instance profile of that name or ARN (none when it does not exist)."""
    from moto.iam.models import iam_backends

    for profile in iam_backends[account]["aws"].instance_profiles.values():
        if name_or_arn in (profile.name, profile.arn):
            return [member.arn for member in profile.roles]
    return []


def launch_template_profile(account: str, region: str, spec: dict[str, Any]) -> str | None:
    """The instance profile (name or ARN) of the launch template version a group's LaunchTemplate names."""
    from moto.ec2.models import ec2_backends

    backend: Any = ec2_backends[account][region]
    names = backend.launch_template_name_to_ids
    template_id = spec.get("LaunchTemplateId") or names.get(spec.get("LaunchTemplateName"))
    template = backend.launch_templates.get(template_id)
    if template is None:
        return None
    profile = template.get_version(spec.get("Version") or "$Default").data.get("IamInstanceProfile") or {}
    return profile.get("Arn") or profile.get("Name")


def ec2_tagged(account: str, region: str, resource_id: str) -> Found:
    """An EC2 resource's tags (a network interface, a volume, an instance), by its id."""
    from moto.ec2.models import ec2_backends

    tags = ec2_backends[account][region].describe_tags(filters={"resource-id": [resource_id]})
    return Found(resource_id, {tag["key"]: tag["value"] for tag in tags})


def dynamodb_hash_key(account: str, region: str, table_name: str) -> str | None:
    """The name of the table's partition key attribute (None when there is no such table)."""
    from moto.dynamodb.models import dynamodb_backends

    table = dynamodb_backends[account][region].tables.get(table_name.rsplit("/", 1)[-1])
    return table.hash_key_attr if table is not None else None
