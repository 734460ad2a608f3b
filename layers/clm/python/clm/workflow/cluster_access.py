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
    from clm.workflow.target_aws import TargetAws


@functools.lru_cache(maxsize=4)
def rendering(key: str) -> RenderedCluster:
    """The stored rendering `key` (content-addressed, so a warm Lambda container may keep it)."""
    return load_rendering(client("s3"), Settings.from_env().artefact_bucket, key)


def registry_cluster(cluster_id: str) -> Cluster:
    """The cluster as the registry has it now (ClusterNotFound, ValidationError)."""
    from clm.registry.dynamodb import DynamoRegistry  # boto3's DynamoDB types: not at the handler's import

    return DynamoRegistry(client("dynamodb"), Settings.from_env().registry_table).get(cluster_id)


@contextmanager
def kube_client(cluster: Cluster, where: TargetAws | None = None) -> Iterator[KubeClient]:
    """A Kubernetes API client for `cluster`, authenticated as its config items say, kept by the warm container
    for its next steps (clm.kube.connections): a kubeconfig secret is the hub's (Secrets Manager), an EKS cluster's
    token is signed in its target, as the target role there (`where`; None: with the hub's own credentials)."""
    from clm.aws import session
    from clm.kube.connect import SECRET_ITEM
    from clm.kube.connections import kept_client

    principal = os.environ.get("AWS_ACCESS_KEY_ID", "")
    if cluster.config_items.get(SECRET_ITEM) or where is None or where.home:
        yield kept_client(cluster, session, principal)
    else:  # kept less long than the target's session lasts (clm.target_sessions.RENEW_BEFORE)
        yield kept_client(cluster, where.session, f"{principal} as {where.target}")
