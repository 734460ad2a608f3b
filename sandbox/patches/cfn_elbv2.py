"""Deleting a stack deletes its ELBv2 listeners, listener rules and target groups.

moto 5.2.5 creates them from templates but has no CloudFormation delete for them (only the load balancer's), so a
deleted stack left them behind: the stacks of kube-ingress-aws-controller (a load balancer, listeners, target
groups) are deleted at decommission. Each is deleted through the ELBv2 backend, by its ARN (the physical id), as
the API's Delete* call would (a target group still in use is refused).
"""

from __future__ import annotations

from typing import Any

from clm_sandbox.patches._patching import replace

# moto class -> the backend's delete method, which takes the resource's ARN
DELETES = {
    "FakeListener": "delete_listener",
    "FakeListenerRule": "delete_rule",
    "FakeTargetGroup": "delete_target_group",
}


def install() -> None:
    """Give moto's listener, listener rule and target group a CloudFormation delete (idempotent)."""
    from moto.elbv2 import models

    for name, method in DELETES.items():
        replace(getattr(models, name), "delete_from_cloudformation_json", classmethod(_deleter(method)))


def _deleter(method: str) -> Any:
    def delete(
        cls: type, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        from moto.elbv2.models import elbv2_backends

        getattr(elbv2_backends[account_id][region_name], method)(resource_name)

    return delete
