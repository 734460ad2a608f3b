"""Shared by the stacks tests (no tests here): the example clusters rendered, in-process moto with the sandbox's
CloudFormation and Auto Scaling patches (failures roll stacks back with events, termination protection,
ContinueUpdateRollback, in-place updates, groups that launch their launch template version and spot instances),
and moto's stack state where nothing can reach a state by itself.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.cloudformation.models import Event, Stack, cloudformation_backends

from clm.config.local import LocalSource
from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm.render.renderer import RenderedCluster, Renderer
from clm_sandbox.patches import autoscaling_launch, cloudformation_api, cloudformation_inplace_updates
from infra.cluster_role_boundary import BOUNDARY_EXPORT, CLUSTER_ROLE_PATH, PATH_EXPORT

EXAMPLES = Path(__file__).parents[2] / "examples"
ACCOUNT = "123456789012"  # moto's default account, also the example clusters' account
STACK_TYPE = "AWS::CloudFormation::Stack"
ROLLBACK_FAILED_UPDATE = "UPDATE_ROLLBACK_FAILED"
SESSION = boto3.Session(region_name="eu-central-1")  # shared by the tests, so that service models load once
EXPORTS_STACK = "clm-exports"  # stands in for CLM's own stack, whose exports the examples import
PATCHES = (cloudformation_api, cloudformation_inplace_updates, autoscaling_launch)


def example_cluster(local_id: str) -> Cluster:
    """An example cluster from examples/clusters.yaml."""
    clusters = load_clusters((EXAMPLES / "clusters.yaml").read_text())
    return next(cluster for cluster in clusters if cluster.local_id == local_id)


def render(cluster: Cluster, **config_items: str) -> RenderedCluster:
    """The cluster rendered with examples/config, with extra config items."""
    cluster = dataclasses.replace(cluster, config_items={**cluster.config_items, **config_items})
    return Renderer(LocalSource(EXAMPLES / "config").fetch()).render(cluster)


def moto_stack(name: str, region: str = "eu-central-1") -> Stack:
    """moto's own stack object, for states nothing in moto reaches by itself."""
    return cloudformation_backends[ACCOUNT][region].get_stack(name)


def record_rollback_failure(name: str, resource: str, resource_type: str, reason: str) -> None:
    """Give a stack the events and status CloudFormation writes when an update's rollback fails on a resource.

    With the sandbox's patches a failing resource rolls its stack back by itself, but nothing in moto fails a
    rollback (a resource that cannot be restored), so only moto's backend can show UPDATE_ROLLBACK_FAILED.
    """
    stack = moto_stack(name)
    for logical_id, kind, status, why in (
        (resource, resource_type, "UPDATE_FAILED", reason),
        (name, STACK_TYPE, ROLLBACK_FAILED_UPDATE, f"The following resource(s) failed to update: [{resource}]."),
    ):
        physical_id = stack.stack_id if kind == STACK_TYPE else ""
        stack.events.append(Event(stack.stack_id, name, logical_id, physical_id, kind, status, why, None))
    stack.status = ROLLBACK_FAILED_UPDATE


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
def stacks_aws(aws: boto3.Session) -> boto3.Session:
    """A session on in-process moto (`aws`) with the sandbox's CloudFormation and Auto Scaling patches installed,
    and the exports CLM's own stack gives cluster stacks (the path and permissions boundary of their roles)."""
    for patch in PATCHES:
        patch.install()
    export_cluster_role_settings(SESSION.client("cloudformation"))  # the example clusters' region
    return SESSION


def export_cluster_role_settings(cfn: Any) -> None:
    """A stack exporting what CLM's stack exports to the examples' templates (infra.cluster_role_boundary)."""
    outputs = {
        "Path": {"Value": CLUSTER_ROLE_PATH, "Export": {"Name": PATH_EXPORT}},
        "Boundary": {
            "Value": f"arn:aws:iam::{ACCOUNT}:policy/clm-cluster-role-boundary",
            "Export": {"Name": BOUNDARY_EXPORT},
        },
    }
    body = {"Resources": {"Nothing": {"Type": "AWS::CloudFormation::WaitConditionHandle"}}, "Outputs": outputs}
    cfn.create_stack(StackName=EXPORTS_STACK, TemplateBody=json.dumps(body))


@pytest.fixture
def clients(stacks_aws: boto3.Session) -> Clients:
    """Clients bound to the test's in-process, patched moto, by service name."""
    return Clients(stacks_aws)
