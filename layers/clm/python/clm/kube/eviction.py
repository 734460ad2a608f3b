"""Evicting a pod through the Eviction API (policy/v1 or policy/v1beta1), and forced deletion.

429 means a PodDisruptionBudget refuses; so does the 500 for a pod covered by several budgets and
the 403 for a budget in a bad state. Both calls leave the pod its own termination grace period.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clm.kube.errors import DrainError, KubeApiError
from clm.kube.pods import pod_key

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.kube.pods import Pod

EVICTED, GONE, BLOCKED = "evicted", "gone", "blocked"
_BUDGET_IN_CAUSE = re.compile(r"disruption budget (\S+) (?:needs|is still)")
_SEVERAL_BUDGETS = "more than one PodDisruptionBudget"


@dataclass(frozen=True)
class EvictionOutcome:
    """`result` is evicted, gone (already deleted) or blocked.

    A blocked outcome is a budget's refusal (`by_budget`; `pdb` names the budget when the server
    did) or a passing failure worth retrying soon.
    """

    pod: str
    result: str
    reason: str = ""
    pdb: str | None = None
    by_budget: bool = True


def _budget_named(pod: Pod, body: dict[str, Any]) -> str | None:
    for cause in (body.get("details") or {}).get("causes") or []:
        match = _BUDGET_IN_CAUSE.search(cause.get("message", ""))
        if match:
            return f"{pod['metadata']['namespace']}/{match.group(1)}"
    details = body.get("details") or {}
    if details.get("kind") == "poddisruptionbudget" and details.get("name"):
        return f"{pod['metadata']['namespace']}/{details['name']}"
    return None


def _refusal(pod: Pod, exc: KubeApiError) -> EvictionOutcome | None:
    """The outcome for an error status that is a budget's refusal or a passing problem; None otherwise."""
    key = pod_key(pod)
    causes = "; ".join(c.get("message", "") for c in (exc.body.get("details") or {}).get("causes") or [])
    if (
        exc.status == 429
        or _SEVERAL_BUDGETS in exc.reason
        or (exc.status == 403 and (exc.body.get("details") or {}).get("kind") == "poddisruptionbudget")
    ):
        return EvictionOutcome(key, BLOCKED, causes or exc.reason, _budget_named(pod, exc.body))
    if exc.transient:
        return EvictionOutcome(
            key, BLOCKED, f"eviction failed, will retry: {exc.status or ''} {exc.reason}".strip(), by_budget=False
        )
    return None


def evict(kube: KubeClient, pod: Pod, api_version: str) -> EvictionOutcome:
    """Ask the API server to evict `pod`; never retried here (the drain pass is the retry loop).

    Raises DrainError when the server refuses for a reason other than a budget (e.g. forbidden).
    """
    meta = pod["metadata"]
    body = {
        "apiVersion": api_version,
        "kind": "Eviction",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
    }
    path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/eviction"
    try:
        kube.request("POST", path, body=body, retries=0)
    except KubeApiError as exc:
        if exc.status == 404:
            return EvictionOutcome(pod_key(pod), GONE)
        outcome = _refusal(pod, exc)
        if outcome is None:
            raise DrainError(f"evicting pod {pod_key(pod)}: {exc.status} {exc.reason}", kube.cluster_id) from None
        return outcome
    return EvictionOutcome(pod_key(pod), EVICTED)


def delete_pod(kube: KubeClient, pod: Pod) -> bool:
    """Delete `pod` past its budgets, with its own grace period; False when it was already gone.

    A UID precondition keeps a same-named successor (StatefulSet) safe.
    """
    meta = pod["metadata"]
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": meta["uid"]}}
    try:
        kube.request("DELETE", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}", body=body)
    except KubeApiError as exc:
        if exc.status in (404, 409):
            return False
        message = f"deleting pod {pod_key(pod)}: {exc.status or 'no response'} {exc.reason}"
        raise DrainError(message, kube.cluster_id, transient=exc.transient) from None
    return True
