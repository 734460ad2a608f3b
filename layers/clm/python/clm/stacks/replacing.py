"""Resources through which CloudFormation itself replaces instances when it updates a stack: EC2 instances, and auto
scaling groups with a rolling or replacing UpdatePolicy. CLM's own node-pool stacks have neither (the roll replaces
their instances, node by node); a stack that has one makes its update disruptive work (docs/rollouts.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REPLACING_POLICIES = ("AutoScalingRollingUpdate", "AutoScalingReplacingUpdate")


def instance_replacers(template: Mapping[str, Any]) -> list[str]:
    """The logical ids, sorted, of the template's resources whose update may replace instances."""
    resources = template.get("Resources")
    found = []
    for name, resource in resources.items() if isinstance(resources, Mapping) else ():
        if not isinstance(resource, Mapping):
            continue
        policy = resource.get("UpdatePolicy")
        rolling = isinstance(policy, Mapping) and any(key in policy for key in REPLACING_POLICIES)
        kind = resource.get("Type")
        if kind == "AWS::EC2::Instance" or (kind == "AWS::AutoScaling::AutoScalingGroup" and rolling):
            found.append(str(name))
    return sorted(found)
