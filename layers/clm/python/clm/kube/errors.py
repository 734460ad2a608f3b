"""Typed errors of Kubernetes access; each names the cluster and the object, file or node at fault.

No error ever carries a credential: messages are built from names, paths and the API's own Status
message, never from request headers or kubeconfig contents.
"""

from __future__ import annotations

from clm.errors import ClmError, _located


class KubeError(ClmError):
    """Base of the errors of `clm.kube`; `cluster_id` is the cluster when known. `transient`: retrying the step
    later may succeed (the server was unreachable, throttling or unavailable); the workflow's handler raises such
    an error as TransientError, which the state machine retries, so an error that names the object keeps it."""

    asl_name = "KubeError"

    def __init__(self, message: str, cluster_id: str | None = None, *, transient: bool = False):
        self.cluster_id = cluster_id
        self.message = message
        self.transient = transient
        super().__init__(_located(message, cluster_id and f"cluster {cluster_id}"))


class KubeAuthError(KubeError):
    """No usable credentials: a missing secret, a broken kubeconfig, or the API server refused them."""

    asl_name = "KubeAuthError"


class KubeApiError(KubeError):
    """An API request failed; `status` is the HTTP status (0 when the server was not reached)."""

    asl_name = "KubeApiError"

    def __init__(
        self, method: str, path: str, status: int, reason: str, cluster_id: str | None = None, body: dict | None = None
    ):
        self.method = method
        self.path = path
        self.status = status
        self.reason = reason
        self.body = body or {}
        message = f"{method} {path}: {status or 'no response'} {reason}".rstrip()
        super().__init__(message, cluster_id, transient=_retryable(status, self.body))


def _retryable(status: int, body: dict) -> bool:
    """Whether the same request may succeed later: network trouble, throttling, an unavailable server, or a 500
    the server marks as a timeout or retryable (other 500s are bugs or bad input)."""
    if status == 500:
        return body.get("reason") in ("ServerTimeout", "Timeout") or bool(
            (body.get("details") or {}).get("retryAfterSeconds")
        )
    return status in (0, 429, 502, 503, 504)


class ApiServerNotReady(KubeError):
    """The API server does not answer GET /readyz with 200 yet (the workflow retries, then gives up)."""


class UnknownKindError(KubeError):
    """The cluster serves no resource for a kind (or apiVersion and kind); `where` names file or entry."""

    asl_name = "UnknownKindError"

    def __init__(self, kind: str, api_version: str | None, where: str, cluster_id: str | None = None):
        self.kind = kind
        self.api_version = api_version
        self.where = where
        what = f"{api_version} {kind}" if api_version else kind
        super().__init__(f"{where}: the cluster serves no resource of kind {what}", cluster_id)


class ApplyError(KubeError):
    """Applying one rendered object failed; the message names the file, document and object."""

    asl_name = "ApplyError"


class DeletionError(KubeError):
    """A declarative deletion failed; the message names the deletions.yaml entry."""

    asl_name = "DeletionError"


class DrainError(KubeError):
    """Cordoning or draining a node failed for a reason a retry will not fix (not a PDB block)."""

    asl_name = "DrainError"


class NodeNotFound(DrainError):
    """The node to cordon or drain is not (or no longer) registered."""

    asl_name = "NodeNotFound"
