"""cdk-nag's AwsSolutions checks, and acknowledging a finding where the resource or permission is made.

Every acknowledgement carries its reason. Findings of wildcard resources are named as cdk-nag names them
(`AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:...:stack/*]`), so `acknowledge_wildcards` renders the
resolved ARN expression the same way and acknowledges exactly that finding, never the whole rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import Construct, IConstruct

PACK = "AwsSolutions"


def add_checks(scope: Construct) -> None:
    """Run the AwsSolutions rules on every stack of the app at synthesis (findings fail the synthesis)."""
    Validations.of(scope).add_plugins(AwsSolutionsChecks(scope))


def acknowledge(scope: IConstruct, finding: str, reason: str) -> None:
    """Acknowledge one finding (`L1`, `IAM5[Resource::*]`, ...) on `scope` and everything under it."""
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{PACK}::{PACK}-{finding}", reason=reason))


def acknowledge_wildcards(scope: IConstruct, resources: Iterable[str], reason: str) -> None:
    """Acknowledge the IAM5 finding of each resource (an ARN, possibly with tokens) that holds a wildcard."""
    stack = Stack.of(scope)
    for resource in resources:
        rendered = finding_text(stack.resolve(resource))
        if "*" in rendered:
            acknowledge(scope, f"IAM5[Resource::{rendered}]", reason)


def finding_text(value: Any) -> str:
    """A resolved CloudFormation value as cdk-nag writes it in a finding (`<AWS::Region>`, `<Logical.Arn>`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(finding_text(part) for part in parts)
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return f"<{'.'.join(value['Fn::GetAtt'])}>"
    raise ValueError(f"cannot render {value!r} as a cdk-nag finding")
