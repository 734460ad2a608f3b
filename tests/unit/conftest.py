"""Unit-test fixtures: the example config repository and registry (as clusters, and as a moto table)."""

from __future__ import annotations

from pathlib import Path

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
