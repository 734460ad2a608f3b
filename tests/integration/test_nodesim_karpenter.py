"""The node simulator's Karpenter stand-in against the real v1.20.2 control plane and moto's EC2: Karpenter's CRDs
install, pending pods get an instance and a Node, a terminated instance takes its Node and NodeClaim along and the
pods that were on it get a replacement."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from clm_sandbox.controlplane import ControlPlane
from clm_sandbox.nodesim import NodeSimulator
from clm_sandbox.nodesim.aws import cluster_tag
from clm_sandbox.nodesim.karpenter_crds import install_karpenter_crds
from tests.integration.test_nodesim import _gone, _ready, _wait_for

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "kubernetes-on-aws" / "cluster" / "manifests"
IMAGE = "registry.invalid/app:1"


@pytest.fixture
def custom(kube_api: client.ApiClient, control_plane: ControlPlane) -> client.CustomObjectsApi:
    install_karpenter_crds(kube_api)
    return client.CustomObjectsApi(kube_api)


@pytest.fixture
def pool(custom: client.CustomObjectsApi) -> Iterator[str]:
    """A NodePool and its EC2NodeClass (tainted, so that only this test's pods go there), removed at the end."""
    name = f"karp-{uuid.uuid4().hex[:6]}"
    nodeclass = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "amiSelectorTerms": [{"id": "ami-12c6146b"}],
            "tags": {"node.kubernetes.io/node-pool": name},
            "userData": "#cloud-config\n",
        },
    }
    nodepool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {"node.kubernetes.io/node-pool": name, "lifecycle-status": "ready"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name},
                    "taints": [{"key": "dedicated", "value": name, "effect": "NoSchedule"}],
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.xlarge"]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-central-1b"]},
                    ],
                },
            },
        },
    }
    custom.create_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", nodeclass)
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", nodepool)
    yield name
    custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodepools", name)
    custom.delete_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", name)


@pytest.fixture
def namespace(kube_api: client.ApiClient) -> Iterator[str]:
    core = client.CoreV1Api(kube_api)
    name = f"karpenter-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)


def _deployment(pool: str, replicas: int) -> client.V1Deployment:
    labels = {"app": "inflate"}
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name="inflate"),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(
                    node_selector={"karpenter.sh/nodepool": pool},
                    tolerations=[client.V1Toleration(key="dedicated", value=pool, effect="NoSchedule")],
                    termination_grace_period_seconds=1,
                    containers=[client.V1Container(name="app", image=IMAGE)],
                ),
            ),
        ),
    )


def test_pending_pods_get_a_karpenter_node_and_a_replacement_after_termination(
    kube_api: client.ApiClient, aws: boto3.Session, custom: client.CustomObjectsApi, pool: str, namespace: str
) -> None:
    core, apps, ec2 = client.CoreV1Api(kube_api), client.AppsV1Api(kube_api), aws.client("ec2")
    cluster_id = f"aws:123456789012:eu-central-1:karp-{uuid.uuid4().hex[:6]}"
    sim = NodeSimulator(kube_api, aws, cluster_id, boot_delay=1, pod_ready_delay=0.5, poll_interval=0.2, karpenter=True)
    with sim:
        apps.create_namespaced_deployment(namespace, _deployment(pool, 3))

        def ready_pods(not_on: str = "") -> list[client.V1Pod]:
            """The 3 Ready pods (none on node `not_on`: a deleted Node's pods stay Ready until garbage-collected)."""
            pods = [
                p
                for p in core.list_namespaced_pod(namespace).items
                if _ready(p) and not p.metadata.deletion_timestamp and p.spec.node_name != not_on
            ]
            return pods if len(pods) == 3 else []

        pods = _wait_for("3 Ready pods on a Karpenter node", ready_pods, timeout=60)
        assert sim.karpenter is not None and len(sim.karpenter.launches) == 1  # one node for the three pods
        (node_name,) = {p.spec.node_name for p in pods}
        node = core.read_node(node_name)
        labels = node.metadata.labels
        assert labels["karpenter.sh/nodepool"] == pool
        assert labels["node.kubernetes.io/instance-type"] == "m5.xlarge"
        assert labels["topology.kubernetes.io/zone"] == "eu-central-1b"
        assert labels["karpenter.sh/capacity-type"] == "on-demand"
        assert labels["node.kubernetes.io/node-pool"] == pool
        assert [(t.key, t.value, t.effect) for t in node.spec.taints or []] == [("dedicated", pool, "NoSchedule")]
        match = re.fullmatch(r"aws:///(eu-central-1b)/(i-[0-9a-f]+)", node.spec.provider_id)
        assert match, node.spec.provider_id
        instance_id = match.group(2)

        (described,) = [
            i for r in ec2.describe_instances(InstanceIds=[instance_id])["Reservations"] for i in r["Instances"]
        ]
        tags = {t["Key"]: t["Value"] for t in described["Tags"]}
        claim_name = sim.karpenter.launches[0]
        assert tags[cluster_tag(cluster_id)] == "owned"
        assert (tags["karpenter.sh/nodepool"], tags["karpenter.sh/nodeclaim"]) == (pool, claim_name)
        assert tags["karpenter.k8s.aws/ec2nodeclass"] == pool
        assert tags["node.kubernetes.io/node-pool"] == pool  # the EC2NodeClass's tags
        assert described["InstanceType"] == "m5.xlarge"

        def claim_ready() -> dict[str, Any] | None:
            claim = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim_name)
            conditions = {c["type"]: c["status"] for c in claim.get("status", {}).get("conditions", [])}
            return claim if conditions.get("Ready") == "True" else None

        claim = _wait_for("the NodeClaim to be Ready", claim_ready)
        assert claim["status"]["providerID"] == node.spec.provider_id
        assert claim["status"]["nodeName"] == node_name
        assert claim["status"]["imageID"] == "ami-12c6146b"
        assert claim["metadata"]["ownerReferences"][0]["name"] == pool
        nodepool = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodepools", pool)
        nodeclass = custom.get_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", pool)
        for key, owner in (
            ("karpenter.sh/nodepool-hash", nodepool),
            ("karpenter.k8s.aws/ec2nodeclass-hash", nodeclass),
        ):
            assert claim["metadata"]["annotations"][key] == owner["metadata"]["annotations"][key]

        # A new AMI in the EC2NodeClass: the NodeClaim drifts (what CLM's roll is to act on).
        new_ami = {"spec": {"amiSelectorTerms": [{"id": "ami-0fedcba9876543210"}]}}
        custom.patch_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", pool, new_ami)
        assert _wait_for("the NodeClaim to drift", lambda: _drift(custom, claim_name)) == "NodeClassDrifted"

        # Terminated through EC2 (as CLM does): the Node and the NodeClaim go, the pods get a new node.
        ec2.terminate_instances(InstanceIds=[instance_id])
        _wait_for("the Node to be deleted", lambda: _gone(lambda: core.read_node(node_name)), timeout=30)
        _wait_for(
            "the NodeClaim to be deleted",
            lambda: _gone(lambda: custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim_name)),
        )
        replaced = _wait_for("3 Ready pods on a replacement node", lambda: ready_pods(not_on=node_name), timeout=60)
        assert len(sim.karpenter.launches) == 2
        (new_node,) = {p.spec.node_name for p in replaced}
        assert new_node != node_name
        assert core.read_node(new_node).metadata.labels["karpenter.sh/nodepool"] == pool
        new_claim = sim.karpenter.launches[1]
        _wait_for("the new NodeClaim to be Ready", lambda: _drift(custom, new_claim, "Ready") == "Ready")
        assert _drift(custom, new_claim) is None
        claim = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", new_claim)
        assert claim["status"]["imageID"] == "ami-0fedcba9876543210"
    # The stand-in's NodeClaims are its own: a stopped simulator leaves them, the test removes them.
    for claim in custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]:
        if claim["metadata"]["name"].startswith(pool):
            custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim["metadata"]["name"])


def _drift(custom: client.CustomObjectsApi, claim: str, kind: str = "Drifted") -> str | None:
    """The reason of the NodeClaim's condition `kind` when it is True, else None."""
    status = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim).get("status", {})
    found = [c for c in status.get("conditions", []) if c["type"] == kind and c["status"] == "True"]
    return found[0]["reason"] if found else None


def _corpus_crds() -> list[dict[str, Any]]:
    """The Karpenter CRDs of Zalando's configuration (their Go-template guard lines dropped)."""
    documents = []
    for path in sorted((CORPUS / "z-karpenter").glob("0[789]-*.yaml")):
        text = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("{{"))
        documents += [d for d in yaml.safe_load_all(text) if d]
    return documents


@pytest.mark.skipif(not (CORPUS / "z-karpenter").is_dir(), reason="Zalando's configuration is not beside the repo")
def test_zalandos_karpenter_crds_are_accepted_by_the_1_20_api_server(kube_api: client.ApiClient) -> None:
    """apiextensions.k8s.io/v1 CRDs with Karpenter's schemas install on 1.20 (dry run, under a group of their own)."""
    api = client.ApiextensionsV1Api(kube_api)
    crds = _corpus_crds()
    assert sorted(c["spec"]["names"]["kind"] for c in crds) == ["EC2NodeClass", "NodeClaim", "NodePool"]
    for crd in crds:
        group = f"corpus.{crd['spec']['group']}"
        crd["spec"]["group"] = group
        crd["metadata"]["name"] = f"{crd['spec']['names']['plural']}.{group}"
        try:
            created = api.create_custom_resource_definition(crd, dry_run="All")
        except ApiException as exc:
            pytest.fail(f"{crd['metadata']['name']}: {exc.status} {exc.body}")
        assert created.metadata.name == crd["metadata"]["name"]
