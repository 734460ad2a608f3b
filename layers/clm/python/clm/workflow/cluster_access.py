"""What steps that touch a cluster share: its stored rendering (effective config items) and an API client."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from clm.aws import client
from clm.render.renderer import RenderedCluster
from clm.workflow.render_step import load_rendering
from clm.workflow.settings import Settings

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.model import Cluster


@functools.lru_cache(maxsize=4)
def rendering(key: str) -> RenderedCluster:
    """The stored rendering `key` (content-addressed, so a warm Lambda container may keep it)."""
    return load_rendering(client("s3"), Settings.from_env().artefact_bucket, key)


def kube_client(cluster: Cluster) -> KubeClient:
    """A Kubernetes API client for `cluster`, authenticated as its config items say (close it after use)."""
    import boto3

    from clm.kube.connect import connect_cluster

    return connect_cluster(cluster, boto3.Session())
