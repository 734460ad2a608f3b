"""Shared by the stacks tests (no tests here): the example clusters rendered, moto's missing CloudFormation
calls, and moto's stack state where moto cannot reach a state by itself.

moto 5.2.5 does not implement UpdateTerminationProtection or ContinueUpdateRollback, and deletes stacks that
have termination protection on. `cfn_ops` adds the two calls and the protection check for one test, as
CloudFormation behaves; they belong in clm_sandbox.patches for the sandbox.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.cloudformation.exceptions import ValidationError
from moto.cloudformation.models import Event, Stack, cloudformation_backends
from moto.cloudformation.responses import CloudFormationResponse
from moto.core.responses import ActionResult, EmptyResult

from clm.config.local import LocalSource
from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm.render.renderer import RenderedCluster, Renderer

EXAMPLES = Path(__file__).parents[2] / "examples"
ACCOUNT = "123456789012"  # moto's default account, also the example clusters' account
STACK_TYPE = "AWS::CloudFormation::Stack"


def example_cluster(local_id: str) -> Cluster:
    """An example cluster from examples/clusters.yaml."""
    clusters = load_clusters((EXAMPLES / "clusters.yaml").read_text())
    return next(cluster for cluster in clusters if cluster.local_id == local_id)


def render(cluster: Cluster, **config_items: str) -> RenderedCluster:
    """The cluster rendered with examples/config, with extra config items."""
    cluster = dataclasses.replace(cluster, config_items={**cluster.config_items, **config_items})
    return Renderer(LocalSource(EXAMPLES / "config").fetch()).render(cluster)


def moto_stack(name: str, region: str = "eu-central-1") -> Stack:
    """moto's own stack object, for states moto never reaches by itself."""
    return cloudformation_backends[ACCOUNT][region].get_stack(name)


def record_failure(
    name: str, final_status: str, resource: str, resource_type: str, reason: str, region: str = "eu-central-1"
) -> None:
    """Give a stack the events and final status CloudFormation writes when a resource (or, with resource "",
    the stack itself) fails.

    moto creates and updates synchronously and never records a failed resource: an error while creating a
    resource fails the API call and leaves the stack CREATE_IN_PROGRESS. Only moto's backend can show
    what CloudFormation shows after a failure.
    """
    stack = moto_stack(name, region)
    operation = "CREATE" if final_status.startswith("ROLLBACK") else "UPDATE"
    rollback = "ROLLBACK" if operation == "CREATE" else "UPDATE_ROLLBACK"
    events = [(resource, resource_type, f"{operation}_FAILED", reason)] if resource else []
    events += [
        (
            name,
            STACK_TYPE,
            f"{rollback}_IN_PROGRESS",
            f"The following resource(s) failed to {operation.lower()}: [{resource}]." if resource else reason,
        ),
        (name, STACK_TYPE, final_status, None),
    ]
    for logical_id, kind, status, why in events:
        physical_id = stack.stack_id if kind == STACK_TYPE else ""
        stack.events.append(Event(stack.stack_id, name, logical_id, physical_id, kind, status, why, None))
    stack.status = final_status


class Clients(dict[str, Any]):
    """boto3 clients of one session and region, created on first use (creating one takes a few hundred ms)."""

    def __init__(self, session: boto3.Session, region: str | None = None):
        super().__init__()
        self.session = session
        self.region = region or session.region_name

    def __missing__(self, service: str) -> Any:
        self[service] = client = self.session.client(service, region_name=self.region)
        return client


@pytest.fixture
def clients(aws: boto3.Session) -> Clients:
    """Clients bound to the test's in-process moto, by service name."""
    return Clients(aws)


def _update_termination_protection(self: CloudFormationResponse) -> ActionResult:
    stack = self.cloudformation_backend.get_stack(self._get_param("StackName"))
    stack.enable_termination_protection = self._get_bool_param("EnableTerminationProtection", False)
    return ActionResult({"StackId": stack.stack_id})


def _continue_update_rollback(self: CloudFormationResponse) -> ActionResult:
    stack = self.cloudformation_backend.get_stack(self._get_param("StackName"))
    if stack.status != "UPDATE_ROLLBACK_FAILED":
        raise ValidationError(
            message=f"Stack {stack.stack_id} is in {stack.status} state and can not continue update rollback"
        )
    stack.status = "UPDATE_ROLLBACK_COMPLETE"
    return EmptyResult()


@pytest.fixture
def cfn_ops(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto with UpdateTerminationProtection, ContinueUpdateRollback and protected stacks refusing deletion."""
    delete_stack = CloudFormationResponse.delete_stack

    def guarded_delete_stack(self: CloudFormationResponse) -> Any:
        name = self._get_param("StackName")
        stacks = self.cloudformation_backend.stacks
        if any(s.enable_termination_protection for s in stacks.values() if name in (s.name, s.stack_id)):
            raise ValidationError(message=f"Stack [{name}] cannot be deleted while TerminationProtection is enabled")
        return delete_stack(self)

    monkeypatch.setattr(
        CloudFormationResponse, "update_termination_protection", _update_termination_protection, raising=False
    )
    monkeypatch.setattr(CloudFormationResponse, "continue_update_rollback", _continue_update_rollback, raising=False)
    monkeypatch.setattr(CloudFormationResponse, "delete_stack", guarded_delete_stack)
    yield
