"""An ``AWS::IAM::Role`` created or updated by CloudFormation carries the managed policies its ``ManagedPolicyArns``
name, as in AWS; an AWS managed policy (``arn:aws:iam::aws:policy/...``) is loaded from moto's copy when first named.

moto 5.2.5 ignores ``ManagedPolicyArns`` and loads AWS's managed policies only all at once, on opt-in: the CDK
bootstrap's roles (the deploy role's AWSCloudFormationReadOnlyAccess, the CloudFormation execution role's
AdministratorAccess) had no such policy, so the sandbox's IAM refused what AWS allows them.
"""

from __future__ import annotations

import json
from typing import Any

from clm_sandbox.patches._patching import original, replace

AWS_POLICY = ":iam::aws:policy/"


def install() -> None:
    """Wrap moto's CloudFormation role creation and update (idempotent)."""
    from moto.iam.models import Role

    replace(Role, "create_from_cloudformation_json", classmethod(_create))
    replace(Role, "update_from_cloudformation_json", classmethod(_update))


def _create(cls: Any, resource_name: str, template: Any, account_id: str, region_name: str, **kwargs: Any) -> Any:
    from moto.iam.models import Role

    role = original(Role, "create_from_cloudformation_json").__func__(
        cls, resource_name, template, account_id, region_name, **kwargs
    )
    _attach(role, template.get("Properties", {}).get("ManagedPolicyArns") or [], account_id, region_name)
    return role


def _update(
    cls: Any,
    original_resource: Any,
    new_resource_name: str,
    cloudformation_json: Any,
    account_id: str,
    region_name: str,
) -> Any:
    from moto.iam.models import Role

    role = original(Role, "update_from_cloudformation_json").__func__(
        cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name
    )
    _attach(role, cloudformation_json.get("Properties", {}).get("ManagedPolicyArns") or [], account_id, region_name)
    return role


def _attach(role: Any, arns: list[str], account_id: str, region_name: str) -> None:
    """Make ``arns`` exactly the role's attached managed policies."""
    from moto.iam.models import iam_backends
    from moto.utilities.utils import get_partition

    backend = iam_backends[account_id][get_partition(region_name)]
    for arn in set(role.managed_policies) - set(arns):
        backend.detach_role_policy(arn, role.name)
    for arn in arns:
        if AWS_POLICY in arn:
            load_aws_policy(backend, arn, account_id, region_name)
        if arn not in role.managed_policies:
            backend.attach_role_policy(arn, role.name)


def load_aws_policy(backend: Any, arn: str, account_id: str, region_name: str) -> None:
    """Add AWS's managed policy ``arn`` (as moto's data has it) to moto's IAM ``backend`` unless it has it; unknown
    names are left to fail when attached."""
    from moto.iam.aws_managed_policies import aws_managed_policies_data
    from moto.iam.models import AWSManagedPolicy

    if arn in backend.managed_policies:
        return
    name = arn.rsplit("/", 1)[-1]
    data = json.loads(aws_managed_policies_data).get(name)
    if data is not None:
        policy = AWSManagedPolicy.from_data(name, account_id, region_name, data)
        backend.managed_policies[policy.arn] = policy
