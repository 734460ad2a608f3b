"""What steps that touch a cluster share: its stored rendering (effective config items) and an API client."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def kube_client(cluster: Cluster) -> Iterator[KubeClient]:
    """A Kubernetes API client for `cluster`, authenticated as its config items say, kept by the warm container
    for its next steps (clm.kube.connections)."""
    import boto3

    from clm.kube.connections import kept_client

    yield kept_client(cluster, boto3.Session, os.environ.get("AWS_ACCESS_KEY_ID", ""))
