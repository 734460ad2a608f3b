"""A KubeClient for a registry cluster, choosing its auth from config items.

- `kube_auth_secret`: a Secrets Manager secret (name or ARN) holding a kubeconfig or a bearer token;
- otherwise an EKS IAM token for the EKS cluster `eks_cluster_name` (default: the cluster's local_id).

The API server is the registry's `api_server_url` (for EKS, DescribeCluster's endpoint when empty);
its CA is `api_server_ca` (PEM or base64 PEM), else DescribeCluster's for EKS, else the system's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clm.kube.auth import EksTokenSource, decode_ca, read_secret_credentials
from clm.kube.client import KubeClient
from clm.kube.errors import KubeAuthError

if TYPE_CHECKING:
    from clm.model import Cluster

SECRET_ITEM = "kube_auth_secret"
EKS_NAME_ITEM = "eks_cluster_name"
CA_ITEM = "api_server_ca"


def _configured_ca(cluster: Cluster) -> bytes | None:
    value = cluster.config_items.get(CA_ITEM)
    return decode_ca(value, f"config item {CA_ITEM}", cluster.id) if value else None


def _describe_eks(session: Any, name: str, cluster_id: str) -> dict[str, Any]:
    eks = session.client("eks")
    try:
        return eks.describe_cluster(name=name)["cluster"]
    except Exception as exc:
        raise KubeAuthError(
            f"EKS cluster {name} (config item {EKS_NAME_ITEM}) cannot be described: {type(exc).__name__}", cluster_id
        ) from None


def connect_cluster(cluster: Cluster, session: Any) -> KubeClient:
    """A client for `cluster` with credentials from its config items (see the module doc)."""
    secret_id = cluster.config_items.get(SECRET_ITEM)
    if secret_id:
        credentials = read_secret_credentials(session, secret_id, cluster.id)
        if credentials.kubeconfig is not None:
            return KubeClient.from_kubeconfig(credentials.kubeconfig, cluster_id=cluster.id)
        if not cluster.api_server_url:
            raise KubeAuthError(f"secret {secret_id} holds a token but api_server_url is empty", cluster.id)
        return KubeClient.from_token(
            cluster.api_server_url, str(credentials.token), _configured_ca(cluster), cluster.id
        )
    name = cluster.config_items.get(EKS_NAME_ITEM) or cluster.local_id
    server, ca = cluster.api_server_url, _configured_ca(cluster)
    if not server or ca is None:
        described = _describe_eks(session, name, cluster.id)
        server = server or described.get("endpoint", "")
        ca = ca or decode_ca(
            (described.get("certificateAuthority") or {}).get("data", ""),
            f"EKS cluster {name}'s certificate authority",
            cluster.id,
        )
    return KubeClient.from_token(server, EksTokenSource(session, name), ca, cluster.id)
