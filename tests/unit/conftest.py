"""Unit-test fixtures: the example config repository and registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from clm.config.local import LocalSource
from clm.config.tree import ConfigTree
from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.fixture(scope="session")
def example_tree() -> ConfigTree:
    """examples/config as a configuration tree."""
    return LocalSource(EXAMPLES / "config").fetch()


@pytest.fixture(scope="session")
def example_clusters() -> list[Cluster]:
    """The clusters of examples/clusters.yaml."""
    return load_clusters((EXAMPLES / "clusters.yaml").read_text())
