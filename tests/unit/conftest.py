"""Unit-test fixtures: the example config repository and registry (as clusters, and as a moto table)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from clm.config.local import LocalSource
from clm.config.tree import ConfigTree
from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.fixture(scope="session")
def example_tree() -> ConfigTree:
    """examples/config as a configuration tree."""
    return LocalSource(EXAMPLES / "config").fetch()


@pytest.fixture(scope="session")
def example_clusters() -> list[Cluster]:
    """The clusters of examples/clusters.yaml."""
    return load_clusters((EXAMPLES / "clusters.yaml").read_text())


@pytest.fixture
def example_registry(aws: boto3.Session, example_clusters: list[Cluster]) -> DynamoRegistry:
    """A registry table `clm-registry` on in-process moto holding the example clusters."""
    client = aws.client("dynamodb")
    create_table(client, "clm-registry")
    registry = DynamoRegistry(client, "clm-registry")
    for cluster in example_clusters:
        registry.put(cluster)
    return registry


@pytest.fixture
def reconciling(aws: boto3.Session, example_registry: DynamoRegistry, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """What the reconcile function gets from the CDK app, with a provision state machine that does nothing; yields
    the Step Functions client."""
    sfn = aws.client("stepfunctions")
    definition = json.dumps({"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 600, "End": True}}})
    machine = sfn.create_state_machine(
        name="provision", definition=definition, roleArn="arn:aws:iam::123456789012:role/provision"
    )["stateMachineArn"]
    for name, value in {
        "CLM_REGISTRY_TABLE": "clm-registry",
        "CLM_CONFIG_SOURCE": str(EXAMPLES / "config"),
        "CLM_ARTEFACT_BUCKET": "unused",
        "CLM_PROVISION_STATE_MACHINE": machine,
    }.items():
        monkeypatch.setenv(name, value)
    from clm.aws import forget_clients

    forget_clients()  # clients bound to this test's moto
    yield sfn, machine
    forget_clients()
