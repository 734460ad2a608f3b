"""Credentials for a cluster: EKS IAM tokens and Secrets Manager secrets holding a kubeconfig or a token.

Tokens are returned to the client builder only; nothing here logs them or puts them in an error.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, field
from typing import Any

import yaml

from clm.kube.errors import KubeAuthError
from clm.yamlutil import safe_load

EKS_TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
PRESIGN_EXPIRES = 60
# EKS accepts a token for 15 minutes after it was signed, whatever X-Amz-Expires says (aws-iam-authenticator sets
# 60 "for legacy reasons" and caches its tokens 14 minutes); CLM remakes it well before.
TOKEN_REUSE_SECONDS = 600.0
# A secret is a cluster's credential only if it carries this tag with the cluster's id: a registry item cannot pick
# another cluster's secret (IAM lets the functions read only secrets carrying the tag: infra/permissions.py).
CLUSTER_ID_TAG = "clm:cluster-id"


def eks_token(session: Any, cluster_name: str) -> str:
    """An EKS bearer token, as aws-iam-authenticator makes it.

    A presigned STS GetCallerIdentity URL (regional endpoint, 60 s expiry) that signs the header
    `x-k8s-aws-id: <cluster_name>`, base64url-encoded without padding, after "k8s-aws-v1.".
    """
    sts = session.client("sts")

    def add_cluster_header(request: Any, **_: Any) -> None:
        request.headers[CLUSTER_ID_HEADER] = cluster_name

    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_cluster_header)
    url = sts.generate_presigned_url("get_caller_identity", ExpiresIn=PRESIGN_EXPIRES, HttpMethod="GET")
    return EKS_TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


@dataclass
class EksTokenSource:
    """A callable giving a fresh EKS token, remade every `TOKEN_REUSE_SECONDS`; its repr hides the token."""

    session: Any = field(repr=False)
    cluster_name: str
    _token: str = field(default="", repr=False)
    _made_at: float = field(default=float("-inf"), repr=False)

    def __call__(self) -> str:
        if time.monotonic() - self._made_at > TOKEN_REUSE_SECONDS:
            self._token = eks_token(self.session, self.cluster_name)
            self._made_at = time.monotonic()
        return self._token


@dataclass(frozen=True)
class SecretCredentials:
    """What a Secrets Manager secret holds: a parsed kubeconfig, or a bearer token with its server and CA (repr hides
    the kubeconfig and the token)."""

    kubeconfig: dict[str, Any] | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    server: str = ""
    ca: str = ""


def _classify_secret(text: str) -> SecretCredentials | None:
    stripped = text.strip()
    if not stripped:
        return None
    try:
        parsed = safe_load(stripped)
    except yaml.YAMLError:
        parsed = None
    if isinstance(parsed, dict):
        if parsed.get("clusters"):
            server, ca = kubeconfig_endpoint(parsed)
            return SecretCredentials(kubeconfig=parsed, server=server, ca=ca)
        if isinstance(parsed.get("token"), str):
            ca = parsed.get("certificate-authority-data") or parsed.get("ca") or ""
            return SecretCredentials(token=parsed["token"].strip(), server=str(parsed.get("server") or ""), ca=str(ca))
        return None
    if len(stripped.split()) == 1:
        return SecretCredentials(token=stripped)
    return None


def kubeconfig_endpoint(kubeconfig: dict[str, Any]) -> tuple[str, str]:
    """The server and `certificate-authority-data` of a kubeconfig's current context (its only cluster when no
    context is current); empty strings where it names none."""
    clusters = {c.get("name"): c.get("cluster") or {} for c in kubeconfig.get("clusters") or [] if isinstance(c, dict)}
    contexts = {c.get("name"): c.get("context") or {} for c in kubeconfig.get("contexts") or [] if isinstance(c, dict)}
    current = contexts.get(kubeconfig.get("current-context"), {}).get("cluster")
    chosen = clusters.get(current) if current else (next(iter(clusters.values())) if len(clusters) == 1 else None)
    return str((chosen or {}).get("server") or ""), str((chosen or {}).get("certificate-authority-data") or "")


def read_secret_credentials(session: Any, secret_id: str, cluster_id: str) -> SecretCredentials:
    """Read a secret bound to the cluster (tag `clm:cluster-id`, checked first) holding a kubeconfig (YAML or JSON),
    a bearer token, or JSON `{"server", "token", "certificate-authority-data"}`."""
    client = session.client("secretsmanager")
    try:
        tags = {tag["Key"]: tag["Value"] for tag in client.describe_secret(SecretId=secret_id).get("Tags") or []}
        if tags.get(CLUSTER_ID_TAG) != cluster_id:
            raise KubeAuthError(_unbound(secret_id, cluster_id, tags.get(CLUSTER_ID_TAG)), cluster_id)
        value = client.get_secret_value(SecretId=secret_id)
    except client.exceptions.ResourceNotFoundException:
        raise KubeAuthError(f"secret {secret_id} does not exist", cluster_id) from None
    except KubeAuthError:
        raise
    except Exception as exc:
        raise KubeAuthError(f"secret {secret_id} is unreadable: {type(exc).__name__}", cluster_id) from None
    text = value.get("SecretString")
    if text is None:
        text = value.get("SecretBinary", b"").decode(errors="replace")
    credentials = _classify_secret(text)
    if credentials is None:
        raise KubeAuthError(f"secret {secret_id} holds neither a kubeconfig nor a token", cluster_id)
    return credentials


def _unbound(secret_id: str, cluster_id: str, bound_to: str | None) -> str:
    where = f"is bound to cluster {bound_to}" if bound_to else f"has no tag {CLUSTER_ID_TAG}"
    return (
        f"secret {secret_id} {where}: CLM reads a cluster's credentials only from a secret tagged "
        f"{CLUSTER_ID_TAG}={cluster_id} (tag it so if it holds this cluster's credentials)"
    )


def decode_ca(data: str, what: str, cluster_id: str | None = None) -> bytes:
    """PEM bytes from base64 (as kubeconfig's certificate-authority-data) or from PEM text."""
    if "-----BEGIN" in data:
        return data.encode()
    try:
        decoded = base64.b64decode(data, validate=True)
    except ValueError:
        decoded = b""
    if b"-----BEGIN" not in decoded:
        raise KubeAuthError(f"{what} is neither PEM nor base64 of PEM", cluster_id)
    return decoded
