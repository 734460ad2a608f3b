"""The Karpenter stand-in's pure parts: which NodePool takes a pod, the labels of its node, NodeClaims, hashes."""

from __future__ import annotations

import copy
from typing import Any
from unittest.mock import MagicMock

import pytest

from clm_sandbox.nodesim.karpenter import KarpenterStandIn
from clm_sandbox.nodesim.karpenter_crds import karpenter_crds
from clm_sandbox.nodesim.karpenter_model import (
    drift_reason,
    is_unschedulable,
    launch_labels,
    nodeclaim_manifest,
    nodeclass_hashes,
    nodepool_hashes,
    pick_nodepool,
)
from clm_sandbox.nodesim.model import Instance, node_manifest

REGION = "eu-central-1"


def nodepool(name: str, *, labels=None, requirements=None, taints=None, weight=None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": labels or {}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name},
                "requirements": requirements or [],
                "taints": taints or [],
            },
        }
    }
    if weight is not None:
        spec["weight"] = weight
    return {"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec}


def pod(*, selector=None, tolerations=None, affinity_terms=None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeSelector": selector or {}, "tolerations": tolerations or []}
    if affinity_terms is not None:
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": affinity_terms}}
        }
    return {"metadata": {"name": "p", "uid": "u"}, "spec": spec, "status": {}}


ZONES = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-central-1b", "eu-central-1c"]}
TYPES = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.xlarge", "m6i.xlarge"]}
DEDICATED = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
TOLERATES = [{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("the_pod", "expected"),
    [
        (pod(selector={"karpenter.sh/nodepool": "b"}), "b"),
        (pod(selector={"node.kubernetes.io/node-pool": "a"}), "a"),
        (pod(selector={"topology.kubernetes.io/zone": "eu-central-1c"}), "a"),  # heavier than c
        (pod(selector={"node.kubernetes.io/node-pool": "nope"}), None),
        (pod(selector={"unknown-label": "x"}), None),  # no pool defines it
        (pod(selector={"karpenter.sh/nodepool": "c"}), None),  # c's taint is not tolerated
        (pod(selector={"karpenter.sh/nodepool": "c"}, tolerations=TOLERATES), "c"),
        (pod(tolerations=[{"operator": "Exists"}], selector={"workload": "batch"}), "c"),
        (pod(affinity_terms=[{"matchExpressions": [{"key": "workload", "operator": "Exists"}]}]), None),
        (
            pod(
                tolerations=TOLERATES,
                affinity_terms=[
                    {"matchExpressions": [{"key": "workload", "operator": "In", "values": ["web"]}]},
                    {"matchExpressions": [{"key": "workload", "operator": "In", "values": ["batch"]}]},
                ],
            ),
            "c",
        ),
        (
            pod(affinity_terms=[{"matchExpressions": [{**TYPES, "operator": "NotIn", "values": ["m5.xlarge"]}]}]),
            "a",
        ),
        (pod(selector={"node.kubernetes.io/instance-type": "c5.large"}), "b"),  # b leaves types open
    ],
)
def test_pick_nodepool(the_pod, expected):
    pools = [
        nodepool("b", labels={"node.kubernetes.io/node-pool": "b"}, requirements=[ZONES]),
        nodepool("a", labels={"node.kubernetes.io/node-pool": "a"}, requirements=[ZONES, TYPES], weight=10),
        nodepool("c", labels={"workload": "batch"}, taints=DEDICATED),
    ]
    chosen = pick_nodepool(the_pod, pools, REGION)
    assert (chosen["metadata"]["name"] if chosen else None) == expected


def test_a_nodepool_limited_to_zero_launches_nothing():
    limited = nodepool("b", labels={"node.kubernetes.io/node-pool": "b"})
    limited["spec"]["limits"] = {"cpu": "0"}
    assert pick_nodepool(pod(selector={"node.kubernetes.io/node-pool": "b"}), [limited], REGION) is None


def test_launch_labels_take_the_pods_choice_then_the_pools_first_then_defaults():
    pool = nodepool("a", labels={"team": "x"}, requirements=[ZONES, TYPES])
    labels = launch_labels(pod(selector={"topology.kubernetes.io/zone": "eu-central-1c"}), pool, REGION)
    assert labels == {
        "node.kubernetes.io/instance-type": "m5.xlarge",
        "karpenter.sh/capacity-type": "on-demand",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/zone": "eu-central-1c",
        "topology.kubernetes.io/region": REGION,
        "team": "x",
        "karpenter.sh/nodepool": "a",
    }
    spot = launch_labels(pod(selector={"karpenter.sh/capacity-type": "spot"}), nodepool("open"), REGION)
    assert spot["karpenter.sh/capacity-type"] == "spot" and spot["topology.kubernetes.io/zone"] == f"{REGION}a"


def test_only_pods_the_scheduler_gave_up_on_count():
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    waiting = pod()
    assert not is_unschedulable(waiting)
    waiting["status"]["conditions"] = [unschedulable]
    assert is_unschedulable(waiting)
    deleting = copy.deepcopy(waiting)
    deleting["metadata"]["deletionTimestamp"] = "2021-01-01T00:00:00Z"
    assert not is_unschedulable(deleting)


def test_nodeclaim_is_owned_labelled_and_annotated_as_karpenter_does():
    pool = nodepool("a", labels={"team": "x"}, requirements=[TYPES], taints=DEDICATED)
    nodeclass = {"metadata": {"name": "a"}, "spec": {"amiSelectorTerms": [{"id": "ami-1"}]}}
    annotations = {**nodepool_hashes(pool), **nodeclass_hashes(nodeclass)}
    claim = nodeclaim_manifest("a-x1y2z", pool, {"team": "x", "karpenter.sh/nodepool": "a"}, annotations)
    assert claim["metadata"]["ownerReferences"][0] == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "name": "a",
        "uid": "uid-a",
        "blockOwnerDeletion": True,
    }
    assert claim["spec"]["taints"] == DEDICATED and claim["spec"]["requirements"] == [TYPES]
    assert set(claim["metadata"]["annotations"]) == {
        "karpenter.sh/nodepool-hash",
        "karpenter.sh/nodepool-hash-version",
        "karpenter.k8s.aws/ec2nodeclass-hash",
        "karpenter.k8s.aws/ec2nodeclass-hash-version",
    }
    # A changed template or node class changes its hash: what tells drift.
    changed = copy.deepcopy(pool)
    changed["spec"]["template"]["spec"]["requirements"] = []
    assert nodepool_hashes(changed) != nodepool_hashes(pool)
    newer_ami = {"metadata": {"name": "a"}, "spec": {"amiSelectorTerms": [{"id": "ami-2"}]}}
    assert nodeclass_hashes(newer_ami) != nodeclass_hashes(nodeclass)
    assert nodepool_hashes(copy.deepcopy(pool)) == nodepool_hashes(pool)


def test_karpenter_node_carries_the_claims_labels_and_taints():
    instance = Instance(
        "i-1", "ip-1.internal", "10.0.0.1", "eu-central-1b", REGION, "m5.xlarge", "", "a", "", 0.0,
        labels=(("karpenter.sh/nodepool", "a"), ("team", "x")),
        taints=(("dedicated", "batch", "NoSchedule"),),
    )  # fmt: skip
    node = node_manifest(instance, 0.0)
    assert node["metadata"]["labels"]["karpenter.sh/nodepool"] == "a"
    assert "node.kubernetes.io/profile" not in node["metadata"]["labels"]
    assert node["spec"] == {
        "providerID": "aws:///eu-central-1b/i-1",
        "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}],
    }


def test_crds_are_cluster_scoped_v1_with_status():
    crds = {c["spec"]["names"]["kind"]: c for c in karpenter_crds()}
    assert sorted(crds) == ["EC2NodeClass", "NodeClaim", "NodePool"]
    for kind, crd in crds.items():
        assert crd["spec"]["scope"] == "Cluster"
        storage = [v["name"] for v in crd["spec"]["versions"] if v["storage"]]
        assert storage == ["v1"], kind
        assert all(v["subresources"] == {"status": {}} for v in crd["spec"]["versions"])
    assert crds["NodePool"]["metadata"]["name"] == "nodepools.karpenter.sh"
    assert crds["EC2NodeClass"]["metadata"]["name"] == "ec2nodeclasses.karpenter.k8s.aws"


def test_drift_reasons():
    pool = nodepool("a", requirements=[TYPES])
    nodeclass = {"metadata": {"name": "a"}, "spec": {"amiSelectorTerms": [{"id": "ami-1"}]}}
    claim = nodeclaim_manifest("a-1", pool, {}, {**nodepool_hashes(pool), **nodeclass_hashes(nodeclass)})
    claim["status"] = {"imageID": "ami-1"}
    assert drift_reason(claim, pool, nodeclass) is None
    changed_pool = copy.deepcopy(pool)
    changed_pool["spec"]["template"]["metadata"]["labels"] = {"new": "label"}
    assert drift_reason(claim, changed_pool, nodeclass) == "NodePoolDrifted"
    newer = {"metadata": {"name": "a"}, "spec": {"amiSelectorTerms": [{"id": "ami-2"}]}}
    assert drift_reason(claim, pool, newer) == "NodeClassDrifted"
    # Another hash version is not compared (Karpenter re-stamps it); the image still tells.
    claim["metadata"]["annotations"]["karpenter.k8s.aws/ec2nodeclass-hash-version"] = "v0"
    assert drift_reason(claim, pool, newer) == "AMIDrift"
    assert drift_reason(claim, None, None) is None


class _CountingStandIn(KarpenterStandIn):
    """The stand-in's provisioning decisions with the control plane and EC2 left out."""

    def __init__(self, pods_per_node: int) -> None:
        super().__init__(MagicMock(), MagicMock(), "aws:123456789012:eu-central-1:kube-1", pods_per_node=pods_per_node)
        self.pending: list[dict[str, Any]] = []

    def _unschedulable_pods(self) -> list[dict[str, Any]]:
        return self.pending

    def _create(self, nodepool, labels, nodeclasses):
        name = f"{nodepool['metadata']['name']}-{len(self.launches)}"
        self.launches.append(name)
        return name, {"InstanceId": f"i-{len(self.launches)}"}


def _pending(uid: str) -> dict[str, Any]:
    the_pod = pod(selector={"karpenter.sh/nodepool": "a"})
    the_pod["metadata"]["uid"] = uid
    return the_pod


def test_pods_pending_later_join_an_in_flight_nodeclaim_with_room_before_another_launch():
    """The scheduler may give up on a Deployment's pods one pass apart; Karpenter packs the later ones onto the
    NodeClaim already launched for the first rather than launching one per pass."""
    stand_in, pools = _CountingStandIn(pods_per_node=2), [nodepool("a")]
    stand_in.pending = [_pending("1")]
    launched = stand_in._provision(pools, {}, {})
    claims = {name: {} for name, _ in launched}
    assert stand_in.launches == ["a-0"]
    stand_in.pending = [_pending("1"), _pending("2")]
    assert stand_in._provision(pools, {}, claims) == [] and stand_in.launches == ["a-0"]  # "2" fills a-0
    stand_in.pending = [_pending("1"), _pending("2"), _pending("3")]
    assert [name for name, _ in stand_in._provision(pools, {}, claims)] == ["a-1"]  # a-0 is full
    stand_in._delete_claim("a-0")  # its instance went away: its pods need a new node
    assert [name for name, _ in stand_in._provision(pools, {}, {"a-1": {}})] == ["a-2"]
