"""Roles and instance profiles of a rendered stack that CloudFormation's ClusterStackRole will refuse to create or
change: it makes roles only under CLM's path and only with CLM's permissions boundary (infra.cluster_stack_role),
so a role without `PermissionsBoundary` or `Path`, or an instance profile without `Path`, fails its stack the
moment CloudFormation creates or changes it. Named as render warnings (file and logical id), before any call;
not errors, since a stack update that leaves such a role as it is still succeeds (a role Zalando's CLM made)."""

from __future__ import annotations

from typing import Any

FIX = (
    "set `Path: !ImportValue clm-cluster-role-path`{boundary} (docs/deploy.md, ClusterStackRole): "
    "CloudFormation's ClusterStackRole creates and changes roles and instance profiles only under CLM's path"
    "{with_boundary}, so creating or changing it fails"
)
REQUIRED = {
    "AWS::IAM::Role": ("Path", "PermissionsBoundary"),
    "AWS::IAM::InstanceProfile": ("Path",),
}


def unbounded_roles(file: str, template: dict[str, Any]) -> list[str]:
    """A warning for each role or instance profile of `template` that lacks CLM's path or boundary."""
    warnings = []
    for logical_id, resource in (template.get("Resources") or {}).items():
        required = REQUIRED.get(resource.get("Type", "") if isinstance(resource, dict) else "")
        if not required:
            continue
        properties = resource.get("Properties") or {}
        missing = [name for name in required if name not in properties]
        if missing:
            role = resource["Type"] == "AWS::IAM::Role"
            fix = FIX.format(
                boundary=" and `PermissionsBoundary: !ImportValue clm-cluster-role-boundary`" if role else "",
                with_boundary=" with CLM's permissions boundary" if role else "",
            )
            warnings.append(f"{file}: {resource['Type']} {logical_id} has no {' and no '.join(missing)}: {fix}")
    return warnings
