"""Pure parts of the sandbox's Karpenter stand-in: which NodePool a pending pod needs, the labels of the node
launched for it, the NodeClaim, and the hash annotations Karpenter uses to tell drift.

Karpenter's facts followed here (karpenter.sh/v1): a NodeClaim is named `<nodepool>-<suffix>`, owned by its
NodePool, labelled with the NodePool's template labels, `karpenter.sh/nodepool` and the well-known labels it
resolved (instance type, zone, capacity type, arch), and annotated with the NodePool's
`karpenter.sh/nodepool-hash` and the EC2NodeClass's `karpenter.k8s.aws/ec2nodeclass-hash` at launch; a NodeClaim
whose annotations differ from its NodePool's / EC2NodeClass's current ones (same hash version) has drifted.
The hashes here are the sandbox's own (SHA-256 of the canonical JSON), not Karpenter's hashstructure values.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
NODEPOOL_HASH = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION = "karpenter.sh/nodepool-hash-version"
NODECLASS_HASH = "karpenter.k8s.aws/ec2nodeclass-hash"
NODECLASS_HASH_VERSION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
# Tags Karpenter puts on the instances it launches (besides the EC2NodeClass's own tags).
NODEPOOL_TAG, NODECLAIM_TAG, NODECLASS_TAG = NODEPOOL_LABEL, "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass"
# Well-known labels a NodePool may leave open (any value): the launch picks one.
DEFAULTS = {INSTANCE_TYPE_LABEL: "m5.large", CAPACITY_TYPE_LABEL: "on-demand", ARCH_LABEL: "amd64", OS_LABEL: "linux"}

Possible = dict[str, list[str] | None]  # label key -> the values a node of the pool may have (None: any)


def nodepool_labels(nodepool: Mapping[str, Any], region: str) -> Possible:
    """The labels a node of ``nodepool`` may carry: its template labels, its `In` requirements, and the
    well-known labels (open unless a requirement narrows them)."""
    template = nodepool.get("spec", {}).get("template", {})
    possible: Possible = {key: None for key in DEFAULTS}
    possible[ZONE_LABEL] = None
    for requirement in template.get("spec", {}).get("requirements") or []:
        if requirement.get("operator") == "In":
            possible[requirement["key"]] = list(requirement.get("values") or [])
        elif requirement.get("operator") == "Exists":
            possible[requirement["key"]] = None
    for key, value in ((template.get("metadata") or {}).get("labels") or {}).items():
        possible[key] = [value]
    possible[NODEPOOL_LABEL] = [nodepool["metadata"]["name"]]
    possible.setdefault("topology.kubernetes.io/region", [region])
    return possible


def _allows(possible: Possible, expression: Mapping[str, Any]) -> bool:
    key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
    if operator == "DoesNotExist":
        return key not in possible
    if key not in possible:
        return operator == "NotIn"
    options = possible[key]
    if operator == "In":
        return options is None or bool(set(options) & set(values))
    if operator == "NotIn":
        return options is None or bool(set(options) - set(values))
    return True  # Exists, Gt, Lt


def _terms(pod: Mapping[str, Any]) -> list[list[dict[str, Any]]]:
    """The pod's node requirements as OR-ed terms of AND-ed expressions (nodeSelector in every term)."""
    spec = pod.get("spec") or {}
    selector = [{"key": k, "operator": "In", "values": [v]} for k, v in (spec.get("nodeSelector") or {}).items()]
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms") or [{}]
    return [selector + list(term.get("matchExpressions") or []) for term in required]


def tolerates(pod: Mapping[str, Any], taints: list[dict[str, Any]]) -> bool:
    """Whether the pod tolerates every NoSchedule/NoExecute taint of the list."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []

    def tolerated(taint: dict[str, Any]) -> bool:
        for t in tolerations:
            if t.get("effect") and t["effect"] != taint.get("effect"):
                continue
            if t.get("operator") == "Exists" and (not t.get("key") or t["key"] == taint["key"]):
                return True
            if t.get("key") == taint["key"] and (t.get("value") or "") == (taint.get("value") or ""):
                return True
        return False

    return all(tolerated(t) for t in taints if t.get("effect") in ("NoSchedule", "NoExecute"))


def matching_term(pod: Mapping[str, Any], nodepool: Mapping[str, Any], region: str) -> list[dict[str, Any]] | None:
    """The first of the pod's node-requirement terms a node of ``nodepool`` can meet (None: the pool cannot
    take the pod, also when the pod does not tolerate the pool's taints)."""
    if not tolerates(pod, nodepool.get("spec", {}).get("template", {}).get("spec", {}).get("taints") or []):
        return None
    possible = nodepool_labels(nodepool, region)
    return next((term for term in _terms(pod) if all(_allows(possible, e) for e in term)), None)


def at_limit(nodepool: Mapping[str, Any]) -> bool:
    """Whether the NodePool's `spec.limits` allow no launch at all (a resource limited to 0: resources are not
    simulated otherwise)."""
    return any(str(value) in ("0", "0m") for value in (nodepool.get("spec", {}).get("limits") or {}).values())


def pick_nodepool(pod: Mapping[str, Any], nodepools: list[dict[str, Any]], region: str) -> dict[str, Any] | None:
    """The NodePool Karpenter would launch for the pod: the heaviest (`spec.weight`) that can take it and is not at its
    limits, then by name."""
    open_pools = [p for p in nodepools if not at_limit(p)]
    ordered = sorted(open_pools, key=lambda p: (-(p.get("spec", {}).get("weight") or 0), p["metadata"]["name"]))
    return next((p for p in ordered if matching_term(pod, p, region) is not None), None)


def launch_labels(pod: Mapping[str, Any], nodepool: Mapping[str, Any], region: str) -> dict[str, str]:
    """The labels of the node launched for the pod: one value per possible label, the pod's choice where it has one."""
    term = matching_term(pod, nodepool, region) or []
    wanted = {e["key"]: list(e.get("values") or []) for e in term if e["operator"] == "In"}
    labels = {}
    for key, options in nodepool_labels(nodepool, region).items():
        allowed = [v for v in options if v in wanted[key]] if options and key in wanted else options
        if allowed:
            labels[key] = allowed[0]
        elif wanted.get(key):
            labels[key] = sorted(wanted[key])[0]
        elif key in DEFAULTS:
            labels[key] = DEFAULTS[key]
        elif key == ZONE_LABEL:
            labels[key] = f"{region}a"
    return labels


def is_unschedulable(pod: Mapping[str, Any]) -> bool:
    """A pod the scheduler tried and could not place (PodScheduled=False, Unschedulable), not being deleted."""
    if (pod.get("spec") or {}).get("nodeName") or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in conditions
    )


def spec_hash(value: Any) -> str:
    """The sandbox's hash of a spec (decimal, like Karpenter's annotations)."""
    digest = hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return str(int(digest[:16], 16))


def nodepool_hashes(nodepool: Mapping[str, Any]) -> dict[str, str]:
    """The NodePool's drift annotations as its template is now (Karpenter's NodePool hash controller)."""
    return {NODEPOOL_HASH: spec_hash(nodepool["spec"].get("template")), NODEPOOL_HASH_VERSION: "v3"}


def nodeclass_hashes(nodeclass: Mapping[str, Any]) -> dict[str, str]:
    """The EC2NodeClass's drift annotations as its spec is now (Karpenter's EC2NodeClass hash controller)."""
    return {NODECLASS_HASH: spec_hash(nodeclass.get("spec")), NODECLASS_HASH_VERSION: "v4"}


def drift_reason(
    claim: Mapping[str, Any], nodepool: Mapping[str, Any] | None, nodeclass: Mapping[str, Any] | None
) -> str | None:
    """Why a NodeClaim has drifted from its NodePool / EC2NodeClass (Karpenter's reasons), or None.

    As Karpenter: a hash annotation differing from the owner's current one (when both have the same hash
    version), or an image that is not among the EC2NodeClass's AMIs (here: its `amiSelectorTerms` ids).
    """
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    for owner, hashes, reason in (
        (nodepool, nodepool_hashes, "NodePoolDrifted"),
        (nodeclass, nodeclass_hashes, "NodeClassDrifted"),
    ):
        if owner is None:
            continue
        (hash_key, now), (version_key, version) = hashes(owner).items()
        if annotations.get(version_key) == version and annotations.get(hash_key) not in (None, now):
            return reason
    images = [t["id"] for t in ((nodeclass or {}).get("spec") or {}).get("amiSelectorTerms") or [] if t.get("id")]
    image = (claim.get("status") or {}).get("imageID")
    if images and image and image not in images:
        return "AMIDrift"
    return None


def nodeclaim_manifest(
    name: str, nodepool: Mapping[str, Any], labels: Mapping[str, str], annotations: Mapping[str, str]
) -> dict[str, Any]:
    """The NodeClaim Karpenter creates for a launch from ``nodepool`` (status is written once launched)."""
    meta = nodepool["metadata"]
    template = nodepool["spec"]["template"]
    template_meta = template.get("metadata") or {}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": dict(labels),
            "annotations": {**(template_meta.get("annotations") or {}), **annotations},
            "ownerReferences": [
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodePool",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": dict(template["spec"]),
    }


def launched_status(provider_id: str, image_id: str, at: str) -> dict[str, Any]:
    """A NodeClaim's status once its instance runs (Launched), before its Node is Ready."""
    return {
        "providerID": provider_id,
        "imageID": image_id,
        "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
        "conditions": [condition("Launched", at)],
    }


def condition(kind: str, at: str, status: str = "True", reason: str = "") -> dict[str, Any]:
    """A Karpenter status condition."""
    return {"type": kind, "status": status, "reason": reason or kind, "message": "", "lastTransitionTime": at}
