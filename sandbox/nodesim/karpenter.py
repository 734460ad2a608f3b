"""A small Karpenter stand-in for the node simulator: launches moto EC2 instances for pending pods a NodePool can
take, keeps their NodeClaims, and lets the simulator's kubelets register their Nodes.

One :meth:`KarpenterStandIn.reconcile` pass (the simulator runs it on every poll):

1. records the drift hashes on NodePools and EC2NodeClasses (``karpenter.sh/nodepool-hash``,
   ``karpenter.k8s.aws/ec2nodeclass-hash``), as Karpenter's hash controllers do;
2. deletes the NodeClaims whose instance is gone (terminated through EC2: Karpenter's interruption and
   garbage collection) and terminates the instances whose NodeClaim is gone (a deleted NodePool);
3. marks NodeClaims whose Node is Ready (Registered, Initialized, Ready) and sets their Drifted condition
   (reason NodePoolDrifted, NodeClassDrifted or AMIDrift: clm_sandbox.nodesim.karpenter_model.drift_reason);
4. for unschedulable pods no live NodeClaim is nominated for, picks the NodePool (labels, requirements,
   taints, weight), nominates them for an in-flight NodeClaim of that pool with room, else creates a
   NodeClaim, launches an instance tagged as Karpenter tags it (``karpenter.sh/nodepool``,
   ``karpenter.sh/nodeclaim``, ``karpenter.k8s.aws/ec2nodeclass``, ``kubernetes.io/cluster/<id>=owned`` and
   the EC2NodeClass's tags; its user data and first AMI) and writes the
   NodeClaim's status (providerID, imageID, Launched);
5. returns the running instances, with their NodeClaim's labels and taints, for the simulator's kubelets.

While the Deployment kube-system/karpenter exists with 0 replicas (Karpenter stopped, as a decommission leaves it), a
pass only reports the running instances.

Not simulated: consolidation, expiry, Karpenter's own drift replacement (CLM replaces nodes), resources.
"""

from __future__ import annotations

import json
import logging
import secrets
import string
import time
from collections.abc import Iterable
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from clm_sandbox.nodesim.aws import SANDBOX_IMAGE_ID, cluster_tag
from clm_sandbox.nodesim.karpenter_crds import AWS_GROUP, KARPENTER_GROUP, VERSION
from clm_sandbox.nodesim.karpenter_model import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODECLAIM_TAG,
    NODECLASS_TAG,
    NODEPOOL_LABEL,
    NODEPOOL_TAG,
    ZONE_LABEL,
    condition,
    drift_reason,
    is_unschedulable,
    launch_labels,
    launched_status,
    nodeclaim_manifest,
    nodeclass_hashes,
    nodepool_hashes,
    pick_nodepool,
)
from clm_sandbox.nodesim.model import Instance, k8s_time

log = logging.getLogger(__name__)
_LaunchKey = tuple[str, tuple[tuple[str, str], ...]]  # NodePool name, sorted launch labels
REQUEST_TIMEOUT = 10.0
_SUFFIX = string.ascii_lowercase + string.digits
CONTROLLER = "karpenter"  # Karpenter's Deployment in kube-system


class KarpenterStandIn:
    """Karpenter's provisioning loop for one cluster, against the control plane and moto's EC2.

    ``pods_per_node``: pods one launch is nominated for; ``nomination_ttl``: seconds after a NodeClaim's Node
    turned Ready during which its nominated pods wait for the scheduler rather than get another launch.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        ec2: Any,
        cluster_id: str,
        *,
        pods_per_node: int = 110,
        nomination_ttl: float = 10.0,
    ) -> None:
        self.cluster_id = cluster_id
        self.pods_per_node, self.nomination_ttl = pods_per_node, nomination_ttl
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._apps = client.AppsV1Api(api_client)
        self._ec2 = ec2
        self._region = ec2.meta.region_name
        self._nominated: dict[str, str] = {}  # pod uid -> NodeClaim name
        self._ready_at: dict[str, float] = {}  # NodeClaim name -> monotonic time its Node was seen Ready
        self._keys: dict[str, _LaunchKey] = {}  # NodeClaim name -> the NodePool and labels it was launched with
        self.launches: list[str] = []  # NodeClaim names, in launch order

    def reconcile(self, ready_nodes: Iterable[str]) -> list[Instance]:
        """One pass (see the module); returns the cluster's running Karpenter instances.

        While the Deployment kube-system/karpenter exists with 0 replicas (a decommission scales kube-system down,
        as CLM does to stop controllers), Karpenter is not running: nothing is launched, marked or collected.
        """
        if self._stopped():
            claims = {c["metadata"]["name"]: c for c in self._list(KARPENTER_GROUP, "nodeclaims")}
            return [self._instance(i, claims.get(_tags(i).get(NODECLAIM_TAG, ""))) for i in self._running().values()]
        nodepools = self._list(KARPENTER_GROUP, "nodepools")
        nodeclasses = {c["metadata"]["name"]: c for c in self._list(AWS_GROUP, "ec2nodeclasses")}
        self._record_hashes(nodepools, nodeclasses)
        claims = {c["metadata"]["name"]: c for c in self._list(KARPENTER_GROUP, "nodeclaims")}
        running = self._running()
        self._collect_garbage(claims, running)
        self._mark_ready(claims, running, set(ready_nodes))
        self._mark_drift(claims, {p["metadata"]["name"]: p for p in nodepools}, nodeclasses)
        for claim_name, instance in self._provision(nodepools, nodeclasses, claims):
            running[instance["InstanceId"]] = instance
            claims[claim_name] = self._read_claim(claim_name) or {}
        return [self._instance(i, claims.get(_tags(i).get(NODECLAIM_TAG, ""))) for i in running.values()]

    # ---------------------------------------------------------------- Kubernetes
    def _list(self, group: str, plural: str) -> list[dict[str, Any]]:
        return self._custom.list_cluster_custom_object(group, VERSION, plural, _request_timeout=REQUEST_TIMEOUT)[
            "items"
        ]

    def _read_claim(self, name: str) -> dict[str, Any] | None:
        try:
            return self._custom.get_cluster_custom_object(
                KARPENTER_GROUP, VERSION, "nodeclaims", name, _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def _annotate(self, group: str, plural: str, obj: dict[str, Any], annotations: dict[str, str]) -> None:
        current = obj["metadata"].get("annotations") or {}
        if all(current.get(k) == v for k, v in annotations.items()):
            return
        self._custom.patch_cluster_custom_object(
            group, VERSION, plural, obj["metadata"]["name"], {"metadata": {"annotations": annotations}}
        )
        obj["metadata"]["annotations"] = {**current, **annotations}

    def _record_hashes(self, nodepools: list[dict[str, Any]], nodeclasses: dict[str, dict[str, Any]]) -> None:
        for nodepool in nodepools:
            self._annotate(KARPENTER_GROUP, "nodepools", nodepool, nodepool_hashes(nodepool))
        for nodeclass in nodeclasses.values():
            self._annotate(AWS_GROUP, "ec2nodeclasses", nodeclass, nodeclass_hashes(nodeclass))

    def _set_status(self, name: str, status: dict[str, Any]) -> None:
        self._custom.patch_cluster_custom_object_status(
            KARPENTER_GROUP, VERSION, "nodeclaims", name, {"status": status}, _request_timeout=REQUEST_TIMEOUT
        )

    def _delete_claim(self, name: str) -> None:
        try:
            self._custom.delete_cluster_custom_object(
                KARPENTER_GROUP, VERSION, "nodeclaims", name, _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
        self._ready_at.pop(name, None)
        self._keys.pop(name, None)
        self._nominated = {uid: claim for uid, claim in self._nominated.items() if claim != name}

    def _stopped(self) -> bool:
        """Whether Karpenter's Deployment (kube-system/karpenter, as in Zalando's manifests) is scaled to zero; a
        cluster without it has the stand-in as its always-running Karpenter."""
        try:
            found = self._apps.read_namespaced_deployment(CONTROLLER, "kube-system", _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return found.spec.replicas == 0

    def _unschedulable_pods(self) -> list[dict[str, Any]]:
        response = self._core.list_pod_for_all_namespaces(
            field_selector="spec.nodeName=", _preload_content=False, _request_timeout=REQUEST_TIMEOUT
        )
        return [pod for pod in json.loads(response.data)["items"] if is_unschedulable(pod)]

    # ----------------------------------------------------------------------- EC2
    def _running(self) -> dict[str, dict[str, Any]]:
        pages = self._ec2.get_paginator("describe_instances").paginate(
            Filters=[
                {"Name": f"tag:{cluster_tag(self.cluster_id)}", "Values": ["owned"]},
                {"Name": "tag-key", "Values": [NODEPOOL_TAG]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        )
        return {i["InstanceId"]: i for page in pages for r in page["Reservations"] for i in r["Instances"]}

    @staticmethod
    def _image(nodeclass: dict[str, Any] | None) -> str:
        """The EC2NodeClass's first AMI id (moto launches any id), else the sandbox's image."""
        terms = ((nodeclass or {}).get("spec") or {}).get("amiSelectorTerms") or []
        return next((term["id"] for term in terms if term.get("id")), SANDBOX_IMAGE_ID)

    def _launch(
        self, claim: str, pool: str, labels: dict[str, str], nodeclass: dict[str, Any] | None
    ) -> dict[str, Any]:
        spec = (nodeclass or {}).get("spec") or {}
        tags = {
            **{str(k): str(v) for k, v in (spec.get("tags") or {}).items()},
            cluster_tag(self.cluster_id): "owned",
            NODEPOOL_TAG: pool,
            NODECLAIM_TAG: claim,
            NODECLASS_TAG: (nodeclass or {}).get("metadata", {}).get("name", ""),
            "karpenter.sh/managed-by": self.cluster_id,
        }
        options: dict[str, Any] = {
            "ImageId": self._image(nodeclass),
            "InstanceType": labels[INSTANCE_TYPE_LABEL],
            "MinCount": 1,
            "MaxCount": 1,
            "Placement": {"AvailabilityZone": labels[ZONE_LABEL]},
            "TagSpecifications": [
                {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())]}
            ],
        }
        if spec.get("userData"):
            options["UserData"] = spec["userData"]
        if spec.get("instanceProfile"):  # the node's role (its bootstrap runs with it: clm_sandbox.nodesim.bootstrap)
            options["IamInstanceProfile"] = {"Name": spec["instanceProfile"]}
        if labels.get(CAPACITY_TYPE_LABEL) == "spot":
            options["InstanceMarketOptions"] = {"MarketType": "spot"}
        return self._ec2.run_instances(**options)["Instances"][0]

    # --------------------------------------------------------------------- steps
    def _collect_garbage(self, claims: dict[str, dict[str, Any]], running: dict[str, dict[str, Any]]) -> None:
        for name, claim in list(claims.items()):
            provider_id = (claim.get("status") or {}).get("providerID") or ""
            if provider_id and provider_id.rsplit("/", 1)[-1] not in running:
                log.info("cluster %s: instance of NodeClaim %s is gone: deleting it", self.cluster_id, name)
                self._delete_claim(name)
                del claims[name]
        orphans = [i for i, d in running.items() if _tags(d).get(NODECLAIM_TAG) not in claims]
        if orphans:
            log.info("cluster %s: terminating %s (their NodeClaims are gone)", self.cluster_id, orphans)
            self._ec2.terminate_instances(InstanceIds=orphans)
            for instance_id in orphans:
                del running[instance_id]

    def _mark_ready(
        self, claims: dict[str, dict[str, Any]], running: dict[str, dict[str, Any]], ready: set[str]
    ) -> None:
        by_claim = {_tags(i).get(NODECLAIM_TAG): i for i in running.values()}
        for name, claim in claims.items():
            instance = by_claim.get(name)
            if instance is None or instance.get("PrivateDnsName") not in ready or name in self._ready_at:
                continue
            self._ready_at[name] = time.monotonic()
            now = k8s_time(time.time())
            conditions = [c for c in (claim.get("status") or {}).get("conditions") or [] if c["type"] == "Launched"]
            conditions += [condition(kind, now) for kind in ("Registered", "Initialized", "Ready")]
            status = {"nodeName": instance["PrivateDnsName"], "conditions": conditions}
            self._set_status(name, status)
            claim["status"] = {**(claim.get("status") or {}), **status}

    def _mark_drift(
        self,
        claims: dict[str, dict[str, Any]],
        nodepools: dict[str, dict[str, Any]],
        nodeclasses: dict[str, dict[str, Any]],
    ) -> None:
        """Set or clear each launched NodeClaim's Drifted condition (Karpenter's drift controller)."""
        for name, claim in claims.items():
            status = claim.get("status") or {}
            if not status.get("providerID"):
                continue
            pool = (claim["metadata"].get("labels") or {}).get(NODEPOOL_LABEL, "")
            ref = ((claim.get("spec") or {}).get("nodeClassRef") or {}).get("name", "")
            reason = drift_reason(claim, nodepools.get(pool), nodeclasses.get(ref))
            conditions = status.get("conditions") or []
            current = next((c for c in conditions if c["type"] == "Drifted"), None)
            if (current or {}).get("reason") == reason or (current is None and reason is None):
                continue
            kept = [c for c in conditions if c["type"] != "Drifted"]
            if reason is not None:
                kept.append(condition("Drifted", k8s_time(time.time()), reason=reason))
            self._set_status(name, {"conditions": kept})
            log.info("cluster %s: NodeClaim %s drifted: %s", self.cluster_id, name, reason)

    def _in_flight(self, claim: str | None, claims: dict[str, dict[str, Any]]) -> bool:
        """Whether pods nominated for the NodeClaim may still land on it (live, not Ready for long)."""
        if claim is None or claim not in claims:
            return False
        ready_at = self._ready_at.get(claim)
        return ready_at is None or time.monotonic() - ready_at < self.nomination_ttl

    def _nominate_in_flight(self, key: _LaunchKey, uids: list[str], claims: dict[str, dict[str, Any]]) -> list[str]:
        """Nominates pods for in-flight NodeClaims of the same NodePool and labels that have room (Karpenter packs
        pending pods onto in-flight NodeClaims before it launches); returns the pods left over."""
        for claim, launched_with in self._keys.items():
            if launched_with != key or not self._in_flight(claim, claims):
                continue
            room = max(self.pods_per_node - sum(1 for c in self._nominated.values() if c == claim), 0)
            self._nominated.update((uid, claim) for uid in uids[:room])
            uids = uids[room:]
        return uids

    def _provision(
        self,
        nodepools: list[dict[str, Any]],
        nodeclasses: dict[str, dict[str, Any]],
        claims: dict[str, dict[str, Any]],
    ) -> list[tuple[str, dict[str, Any]]]:
        if not nodepools:
            return []
        batches: dict[_LaunchKey, list[str]] = {}
        pools = {p["metadata"]["name"]: p for p in nodepools}
        for pod in self._unschedulable_pods():
            uid = pod["metadata"]["uid"]
            if self._in_flight(self._nominated.get(uid), claims):
                continue
            nodepool = pick_nodepool(pod, nodepools, self._region)
            if nodepool is not None:
                labels = launch_labels(pod, nodepool, self._region)
                batches.setdefault((nodepool["metadata"]["name"], tuple(sorted(labels.items()))), []).append(uid)
        launched = []
        for key, pending in batches.items():
            pool, labels = key
            uids = self._nominate_in_flight(key, pending, claims)
            for start in range(0, len(uids), self.pods_per_node):
                claim, instance = self._create(pools[pool], dict(labels), nodeclasses)
                self._keys[claim] = key
                self._nominated.update((uid, claim) for uid in uids[start : start + self.pods_per_node])
                launched.append((claim, instance))
        return launched

    def _create(
        self, nodepool: dict[str, Any], labels: dict[str, str], nodeclasses: dict[str, dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        pool = nodepool["metadata"]["name"]
        name = f"{pool}-{''.join(secrets.choice(_SUFFIX) for _ in range(5))}"
        ref = ((nodepool["spec"]["template"].get("spec") or {}).get("nodeClassRef") or {}).get("name", "")
        nodeclass = nodeclasses.get(ref)
        annotations = {**nodepool_hashes(nodepool), **(nodeclass_hashes(nodeclass) if nodeclass else {})}
        body = nodeclaim_manifest(name, nodepool, labels, annotations)
        self._custom.create_cluster_custom_object(
            KARPENTER_GROUP, VERSION, "nodeclaims", body, _request_timeout=REQUEST_TIMEOUT
        )
        instance = self._launch(name, pool, labels, nodeclass)
        zone = instance["Placement"]["AvailabilityZone"]
        provider_id = f"aws:///{zone}/{instance['InstanceId']}"
        self._set_status(name, launched_status(provider_id, instance["ImageId"], k8s_time(time.time())))
        self.launches.append(name)
        log.info("cluster %s: NodeClaim %s launched %s for NodePool %s", self.cluster_id, name, provider_id, pool)
        return name, instance

    def _instance(self, described: dict[str, Any], claim: dict[str, Any] | None) -> Instance:
        tags = _tags(described)
        claim = claim or {}
        labels = (claim.get("metadata") or {}).get("labels") or {}
        taints = (claim.get("spec") or {}).get("taints") or []
        return Instance(
            instance_id=described["InstanceId"],
            node_name=described["PrivateDnsName"],
            private_ip=described["PrivateIpAddress"],
            zone=described["Placement"]["AvailabilityZone"],
            region=self._region,
            instance_type=described["InstanceType"],
            asg="",
            pool=tags.get(NODEPOOL_TAG, ""),
            profile="",
            launched_at=described["LaunchTime"].timestamp(),
            labels=tuple(sorted(labels.items())),
            taints=tuple((t["key"], t.get("value") or "", t["effect"]) for t in taints),
        )


def _tags(described: dict[str, Any]) -> dict[str, str]:
    return {tag["Key"]: tag["Value"] for tag in described.get("Tags", [])}
