"""PodDisruptionBudgets as a drain needs them: which match a pod, and whether one is about to change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from clm.kube.selectors import selector_matches
from clm.timestamps import parse_time, utc_now

# A budget whose DisruptionAllowed condition changed this recently may be between an eviction and the replacement
# pod's creation (see Budget.settling): it is not parked on.
RECENT_CHANGE = timedelta(seconds=30)

if TYPE_CHECKING:
    from clm.kube.client import KubeClient
    from clm.kube.pods import Pod


@dataclass(frozen=True)
class Budget:
    """The parts of a PDB a drain uses."""

    namespace: str
    name: str
    selector: dict[str, Any] | None
    empty_selects_all: bool
    disruptions_allowed: int
    current_healthy: int
    desired_healthy: int
    expected_pods: int
    disrupted_pods: int
    up_to_date: bool
    just_changed: bool = False  # whether disruptions became allowed or refused within RECENT_CHANGE
    version: str = ""  # metadata.resourceVersion: changes with every status update (a pod's health, a disruption)

    @property
    def key(self) -> str:
        """`namespace/name`."""
        return f"{self.namespace}/{self.name}"

    @property
    def settling(self) -> bool:
        """Whether the budget is expected to change soon on its own: pods coming up or going, not processed, or
        just changed.

        A budget blocked with every pod healthy (maxUnavailable 0, minAvailable = replicas) is not settling. But
        drains running at once (a batch's nodes) take disruptions from each other: a budget listed as allowing
        disruptions that then refused an eviction was just used by another drain; and a budget with an integer
        minAvailable counts the pods that exist, so between another drain's eviction and the ReplicaSet creating
        the replacement every pod left may be healthy and the budget look blocked for good, though it opens within
        seconds. A steady block has been refusing for a while (the DisruptionAllowed condition, Kubernetes 1.21+).
        """
        return (
            self.current_healthy < self.expected_pods
            or self.disrupted_pods > 0
            or not self.up_to_date
            or self.disruptions_allowed > 0
            or self.just_changed
        )

    @property
    def blocks(self) -> bool:
        """Whether the server, as last seen, refuses every eviction this budget covers."""
        return self.up_to_date and self.disruptions_allowed <= 0

    def selects(self, pod: Pod) -> bool:
        """Whether the budget covers `pod` (same namespace, selector matches)."""
        return pod["metadata"].get("namespace") == self.namespace and selector_matches(
            self.selector, pod["metadata"].get("labels"), empty_matches_all=self.empty_selects_all
        )

    def describe(self) -> str:
        """Its state in words, for a blocked pod's reason."""
        return (
            f"PodDisruptionBudget {self.key} allows {self.disruptions_allowed} disruptions "
            f"({self.current_healthy} healthy of {self.expected_pods}, {self.desired_healthy} needed)"
        )

    @classmethod
    def from_object(cls, pdb: dict[str, Any], api_version: str, now: datetime | None = None) -> Budget:
        """From a PDB object as served by `api_version` (policy/v1 or policy/v1beta1), observed at `now`."""
        meta, spec, status = pdb["metadata"], pdb.get("spec") or {}, pdb.get("status") or {}
        return cls(
            namespace=meta.get("namespace", ""),
            name=meta["name"],
            selector=spec.get("selector"),
            empty_selects_all=api_version != "policy/v1beta1",
            disruptions_allowed=int(status.get("disruptionsAllowed", 0)),
            current_healthy=int(status.get("currentHealthy", 0)),
            desired_healthy=int(status.get("desiredHealthy", 0)),
            expected_pods=int(status.get("expectedPods", 0)),
            disrupted_pods=len(status.get("disruptedPods") or {}),
            up_to_date=int(status.get("observedGeneration", 0)) >= int(meta.get("generation", 0)),
            just_changed=_changed_since(status, (now or utc_now()) - RECENT_CHANGE),
            version=str(meta.get("resourceVersion", "")),
        )


def _changed_since(status: dict[str, Any], since: datetime) -> bool:
    """Whether the DisruptionAllowed condition changed after `since`."""
    for condition in status.get("conditions") or []:
        if condition.get("type") == "DisruptionAllowed" and condition.get("lastTransitionTime"):
            return parse_time(condition["lastTransitionTime"]) > since
    return False


def list_budgets(kube: KubeClient, namespace: str = "", now: datetime | None = None) -> tuple[list[Budget], str]:
    """Every PDB (of one namespace, or all) as at `now` (default: the clock), with the list's resourceVersion for a
    watch."""
    resource = kube.discovery.pdb_resource()
    listed = kube.request("GET", resource.path(namespace))
    budgets = [Budget.from_object(item, resource.api_version, now) for item in listed.get("items") or []]
    return budgets, listed.get("metadata", {}).get("resourceVersion", "")


def budgets_for(pod: Pod, budgets: Sequence[Budget]) -> list[Budget]:
    """The budgets covering `pod`."""
    return [budget for budget in budgets if budget.selects(pod)]


class Allowance:
    """The disruptions each budget allows in one round of evictions: as listed, less those this round took (so
    evictions through one budget, from one node or a batch's, go out only as far as it allows)."""

    def __init__(self, budgets: Sequence[Budget]):
        self.left = {budget.key: budget.disruptions_allowed for budget in budgets if budget.up_to_date}

    def refuses(self, budget: Budget) -> bool:
        """Whether `budget` has nothing left to allow (a budget the server has not processed is left to it)."""
        return self.left.get(budget.key, 1) <= 0

    def take(self, budgets: Sequence[Budget]) -> None:
        """One disruption from each of `budgets` (a pod's covering budgets)."""
        for budget in budgets:
            if budget.key in self.left:
                self.left[budget.key] -= 1

    def describe(self, budget: Budget) -> str:
        """Why `budget` refuses, in words: as listed, or used up by this round's other evictions."""
        taken = budget.disruptions_allowed - self.left.get(budget.key, budget.disruptions_allowed)
        return budget.describe() + (f"; {taken} taken by other evictions meanwhile" if taken > 0 else "")
