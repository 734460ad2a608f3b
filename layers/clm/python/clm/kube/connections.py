"""Kubernetes clients a warm Lambda container keeps between invocations: one per cluster and way of connecting.

Connecting costs a Secrets Manager read or an EKS DescribeCluster, boto3 clients, a TLS handshake and discovery
requests: a few hundred milliseconds before a step's first request. A kept client skips all of that.

A client is kept under everything it was built from: the cluster id, the registry's `api_server_url`, the config
items that choose its credentials (`kube_auth_secret`, `eks_cluster_name`, `api_server_ca`) and the AWS principal
whose credentials made them. A registry change of any of those builds a new client (and drops the cluster's old
one) through clm.kube.connect, with all its checks: an EKS token only ever goes to the endpoint and CA that
DescribeCluster named for the same registry entry (issue 14's rule), never to an endpoint it was not minted for.
A kept client is rebuilt after MAX_AGE (a re-created EKS cluster, a rotated secret are seen within it), and
sooner when the server refuses its credentials (KubeClient.renew); EKS tokens are remade every 10 minutes
(clm.kube.auth). Discovery answers are kept as clm.kube.discovery says.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clm.kube.connect import CA_ITEM, EKS_NAME_ITEM, SECRET_ITEM, connect_cluster

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.model import Cluster

MAX_AGE = 600.0  # seconds

Key = tuple[str, ...]


@dataclass
class _Kept:
    client: KubeClient
    made_at: float


_kept: dict[Key, _Kept] = {}
_lock = threading.Lock()


def _key(cluster: Cluster, principal: str) -> Key:
    items = cluster.config_items
    auth = (items.get(SECRET_ITEM, ""), items.get(EKS_NAME_ITEM, ""), items.get(CA_ITEM, ""))
    return (cluster.id, cluster.api_server_url, *auth, principal)


def kept_client(cluster: Cluster, session: Callable[[], Any], principal: str) -> KubeClient:
    """The kept client for `cluster`, or a new one connected with a boto3 session from `session` (then kept).

    `principal` names the AWS credentials in use (the sandbox runs every function's handler in one process, each
    with its own role). The client is shared: do not close it.
    """
    key = _key(cluster, principal)
    with _lock:
        kept = _kept.get(key)
        if kept is not None and time.monotonic() - kept.made_at < MAX_AGE:
            kept.client.discovery.revalidate()
            return kept.client
        _drop(lambda k: k[0] == cluster.id and k[-1] == principal, close=False)
    boto_session = session()
    client = connect_cluster(cluster, boto_session)
    client.renew = lambda: connect_cluster(cluster, boto_session).transport
    with _lock:
        _kept[key] = _Kept(client, time.monotonic())
    return client


def _drop(which: Callable[[Key], bool], *, close: bool) -> None:
    """Drop the kept clients `which` selects; close them only when nothing can be using them. A client replaced
    while kept (too old, its registry entry changed) may be mid-request in another thread: the sandbox runs a
    function's warm containers as threads of one process, sharing this module. It is left to the garbage
    collector: closing its pooled connections under a request fails that request (the 200-node roll's drains
    failed so, MAX_AGE into the roll)."""
    for key in [k for k in _kept if which(k)]:
        dropped = _kept.pop(key).client
        if close:
            dropped.close()


def forget() -> None:
    """Close and drop every kept client (tests and benchmarks: a cold container)."""
    with _lock:
        _drop(lambda _: True, close=True)
