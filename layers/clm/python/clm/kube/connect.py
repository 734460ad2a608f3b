"""A KubeClient for a registry cluster, choosing its auth from config items.

- `kube_auth_secret`: a Secrets Manager secret (name or ARN) tagged `clm:cluster-id=<the cluster's id>`, holding a
  kubeconfig or `{"server", "token", "certificate-authority-data"}`. The credential goes only to the server the
  secret names, trusting only its CA (else the system's CAs), whatever the registry's `api_server_url` says (data
  for templates, e.g. the hosted zone, here); a registry `api_server_ca` that differs from the secret's is an error.
  So a registry value chooses neither another cluster's secret nor where a secret's token goes.
- otherwise an EKS IAM token for the EKS cluster named by the cluster: a zalando-eks cluster's alias, as CLM names it
  (api/cluster.go Name(); provisioner/zalando_eks.go signs its tokens for the alias), else the config item
  `eks_cluster_name` (default: the cluster's local_id). The EKS cluster must carry the cluster's tag
  `kubernetes.io/cluster/<id>=owned` (CloudFormation gives it from CLM's cluster stack, which CLM tags with the id:
  provisioner/aws.go applyClusterStack), so neither an item nor an alias can reach another cluster. That token is
  cluster-admin for CLM's role, so it goes only to the endpoint EKS DescribeCluster names, trusting only the CA EKS
  names: a registry writer must not be able to send it elsewhere. A zalando-eks cluster's registry `api_server_url`
  is the URL CLM derives the hosted zone and the load balancer certificate from, not the API server's (CLM switches
  to the EKS endpoint after the cluster stack: provisioner/clusterpy.go, ZalandoEKSCreationHook), so it is not
  used here; for any other cluster an `api_server_url` other than that endpoint is an error naming both (nothing
  is sent). `api_server_ca` is not used on this path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from clm.kube.auth import EksTokenSource, decode_ca, read_secret_credentials
from clm.kube.client import KubeClient
from clm.kube.errors import KubeAuthError
from clm.validation import EKS_NAME_ITEM

if TYPE_CHECKING:
    from clm.model import Cluster

SECRET_ITEM = "kube_auth_secret"
CA_ITEM = "api_server_ca"
_DEFAULT_PORTS = {"https": 443, "http": 80}


def _configured_ca(cluster: Cluster) -> bytes | None:
    value = cluster.config_items.get(CA_ITEM)
    return decode_ca(value, f"config item {CA_ITEM}", cluster.id) if value else None


def _describe_eks(session: Any, name: str, source: str, cluster_id: str) -> dict[str, Any]:
    eks = session.client("eks")
    try:
        return eks.describe_cluster(name=name)["cluster"]
    except Exception as exc:
        raise KubeAuthError(
            f"EKS cluster {name} ({source}) cannot be described: {type(exc).__name__}", cluster_id
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


def eks_cluster_name(cluster: Cluster) -> tuple[str, str]:
    """The name of the cluster's EKS cluster, and where it comes from: a zalando-eks cluster's alias (CLM's Name()),
    else the config item eks_cluster_name, else the local_id."""
    if cluster.is_eks:
        return cluster.alias, "the cluster's alias"
    return cluster.config_items.get(EKS_NAME_ITEM) or cluster.local_id, f"config item {EKS_NAME_ITEM}"


def owned_eks_cluster(described: dict[str, Any], cluster: Cluster, name: str, source: str) -> None:
    """Raise KubeAuthError unless the EKS cluster `described` carries `kubernetes.io/cluster/<id>=owned`."""
    owner = f"kubernetes.io/cluster/{cluster.id}"  # clm.stacks.names.cluster_tag_key
    if (described.get("tags") or {}).get(owner) != "owned":
        raise KubeAuthError(
            f"EKS cluster {name} ({source}) is not this cluster's: it lacks the tag {owner}=owned "
            "(CLM's cluster stack gives it; tag an EKS cluster made elsewhere so if it is this cluster)",
            cluster.id,
        )


def _eks_client(cluster: Cluster, session: Any) -> KubeClient:
    name, source = eks_cluster_name(cluster)
    described = _describe_eks(session, name, source, cluster.id)
    owned_eks_cluster(described, cluster, name, source)
    endpoint = described.get("endpoint") or ""
    if not endpoint:
        raise KubeAuthError(f"EKS cluster {name} has no API server endpoint yet", cluster.id)
    if not cluster.is_eks and cluster.api_server_url and not same_endpoint(cluster.api_server_url, endpoint):
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


def _secret_client(cluster: Cluster, session: Any, secret_id: str) -> KubeClient:
    credentials = read_secret_credentials(session, secret_id, cluster.id)
    if not credentials.server:
        raise KubeAuthError(
            f"secret {secret_id} names no server: store the kubeconfig, or "
            '{"server": ..., "token": ..., "certificate-authority-data": ...}, in it (CLM sends a secret\'s token '
            "only to the server the secret names, never to the registry's api_server_url alone)",
            cluster.id,
        )
    what = f"secret {secret_id}'s certificate-authority-data"
    ca = decode_ca(credentials.ca, what, cluster.id) if credentials.ca else None
    configured = _configured_ca(cluster)
    if configured is not None and configured != ca:
        raise KubeAuthError(
            f"config item {CA_ITEM} is not the certificate authority secret {secret_id} names: CLM trusts only the "
            f"secret's; clear {CA_ITEM} (or store the CA in the secret)",
            cluster.id,
        )
    if credentials.kubeconfig is not None:
        return KubeClient.from_kubeconfig(credentials.kubeconfig, cluster_id=cluster.id)
    return KubeClient.from_token(credentials.server, str(credentials.token), ca, cluster.id)


def connect_cluster(cluster: Cluster, session: Any) -> KubeClient:
    """A client for `cluster` with credentials from its config items (see the module doc)."""
    secret_id = cluster.config_items.get(SECRET_ITEM)
    return _secret_client(cluster, session, secret_id) if secret_id else _eks_client(cluster, session)
