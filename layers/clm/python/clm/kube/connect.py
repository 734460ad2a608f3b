"""A KubeClient for a registry cluster, choosing its auth from config items.

- `kube_auth_secret`: a Secrets Manager secret (name or ARN) holding a kubeconfig or a bearer token. The deployment
  controls the secret, so a token goes to the registry's `api_server_url`, trusting config item `api_server_ca`
  (PEM or base64 PEM; else the system's CAs).
- otherwise an EKS IAM token for the EKS cluster `eks_cluster_name` (default: the cluster's local_id). That token
  is cluster-admin for CLM's role, so it goes only to the endpoint EKS DescribeCluster names, trusting only the CA
  EKS names: a registry writer must not be able to send it elsewhere. A registry `api_server_url` other than that
  endpoint is an error naming both (nothing is sent); `api_server_ca` is not used on this path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from clm.kube.auth import EksTokenSource, decode_ca, read_secret_credentials
from clm.kube.client import KubeClient
from clm.kube.errors import KubeAuthError

if TYPE_CHECKING:
    from clm.model import Cluster

SECRET_ITEM = "kube_auth_secret"
EKS_NAME_ITEM = "eks_cluster_name"
CA_ITEM = "api_server_ca"
_DEFAULT_PORTS = {"https": 443, "http": 80}


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


def same_endpoint(first: str, second: str) -> bool:
    """Whether two API server URLs name the same endpoint (scheme, host and port; case, default port and a
    trailing slash aside)."""
    a, b = urlsplit(first.strip()), urlsplit(second.strip())
    try:
        ports = (a.port or _DEFAULT_PORTS.get(a.scheme.lower())), (b.port or _DEFAULT_PORTS.get(b.scheme.lower()))
    except ValueError:  # a port that is not a number
        return False
    return (
        a.scheme.lower() == b.scheme.lower()
        and (a.hostname or "") == (b.hostname or "")
        and ports[0] == ports[1]
        and a.path.rstrip("/") == b.path.rstrip("/")
    )


def _eks_client(cluster: Cluster, session: Any) -> KubeClient:
    name = cluster.config_items.get(EKS_NAME_ITEM) or cluster.local_id
    described = _describe_eks(session, name, cluster.id)
    endpoint = described.get("endpoint") or ""
    if not endpoint:
        raise KubeAuthError(f"EKS cluster {name} has no API server endpoint yet", cluster.id)
    if cluster.api_server_url and not same_endpoint(cluster.api_server_url, endpoint):
        raise KubeAuthError(
            f"api_server_url {cluster.api_server_url} is not the endpoint EKS names for cluster {name} ({endpoint}): "
            "CLM sends EKS IAM tokens only to that endpoint; fix api_server_url or clear it",
            cluster.id,
        )
    ca = decode_ca(
        (described.get("certificateAuthority") or {}).get("data", ""),
        f"EKS cluster {name}'s certificate authority",
        cluster.id,
    )
    return KubeClient.from_token(endpoint, EksTokenSource(session, name), ca, cluster.id)


def connect_cluster(cluster: Cluster, session: Any) -> KubeClient:
    """A client for `cluster` with credentials from its config items (see the module doc)."""
    secret_id = cluster.config_items.get(SECRET_ITEM)
    if not secret_id:
        return _eks_client(cluster, session)
    credentials = read_secret_credentials(session, secret_id, cluster.id)
    if credentials.kubeconfig is not None:
        return KubeClient.from_kubeconfig(credentials.kubeconfig, cluster_id=cluster.id)
    if not cluster.api_server_url:
        raise KubeAuthError(f"secret {secret_id} holds a token but api_server_url is empty", cluster.id)
    return KubeClient.from_token(cluster.api_server_url, str(credentials.token), _configured_ca(cluster), cluster.id)
