"""Karpenter pools through the deployed provision workflow: a Karpenter pool's NodePool and EC2NodeClass are applied
after the cluster's manifests (labelled with the pool, field manager clm), and deleted once the pool leaves the
registry, at every run and without any `karpenter_pools_enabled` item (CLM: provisioner/clusterpy.go provision and
provisioner/node_pools.go Reconcile, the gate removed in 66f2c05); a NodePool CLM did not apply is left alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from clm.kube.karpenter import POOL_LABEL
from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.nodesim import NodeSimulator
from clm_sandbox.nodesim.karpenter_crds import install_karpenter_crds, remove_karpenter_objects
from tests.integration.deployment import ROOT, Deployment, the_run
from tests.unit.test_render_karpenter import KARPENTER, PROVISIONERS, USERDATA

UNGATED = PROVISIONERS.replace('{% if cluster.config_items.karpenter_pools_enabled == "true" %}\n', "", 1).removesuffix(
    "{% endif %}\n"
)

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

KINDS = (("karpenter.sh", "nodepools"), ("karpenter.k8s.aws", "ec2nodeclasses"))
FOREIGN = "hand-made"


def _get(custom: k8s.CustomObjectsApi, group: str, plural: str, name: str) -> dict | None:
    try:
        return custom.get_cluster_custom_object(group, "v1", plural, name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


@pytest.fixture
def custom(kube_api: k8s.ApiClient) -> Iterator[k8s.CustomObjectsApi]:
    """Karpenter's CRDs, and a NodePool someone else made; every NodePool/EC2NodeClass removed at the end."""
    install_karpenter_crds(kube_api)
    custom = k8s.CustomObjectsApi(kube_api)
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": FOREIGN}
    foreign = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": FOREIGN},
        "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": []}}},
    }
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", foreign)
    yield custom
    remove_karpenter_objects(kube_api)


def test_karpenter_pool_objects_are_applied_and_removed_with_the_pool(
    deployment: Deployment, nodes: NodeSimulator, custom: k8s.CustomObjectsApi
) -> None:
    s3 = deployment.session.client("s3")
    for name, body in (("provisioners.yaml", UNGATED), ("userdata.yaml", USERDATA)):
        key = f"config/cluster/node-pools/worker-karpenter/{name}"
        s3.put_object(Bucket=deployment.outputs["ConfigBucketName"], Key=key, Body=body.encode())
    deployment.settle()  # the uploads' reconciles (no cluster yet)
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items.update(kube_auth_secret="clm/kube-1")
    assert "karpenter_pools_enabled" not in cluster.config_items
    cluster = dataclasses.replace(cluster, node_pools=[*cluster.node_pools, KARPENTER])
    deployment.registry.put(cluster)

    first = the_run(deployment.settle(known=0))
    states = deployment.states(first["executionArn"])
    assert states.count("ApplyPhase") == 4 and states.count("StartStack") == 2  # no stack for the Karpenter pool
    for group, plural in KINDS:
        applied = _get(custom, group, plural, KARPENTER.name)
        assert applied is not None, plural
        assert applied["metadata"]["labels"][POOL_LABEL] == KARPENTER.name
        assert {m["manager"] for m in applied["metadata"]["managedFields"]} == {"clm"}
    nodepool = _get(custom, "karpenter.sh", "nodepools", KARPENTER.name)
    assert nodepool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == KARPENTER.name

    known = len(deployment.executions(deployment.provision))
    ready = deployment.registry.get(deployment.cluster_id)
    deployment.registry.put(dataclasses.replace(ready, node_pools=cluster.node_pools[:-1]))
    the_run(deployment.settle(known))
    assert [_get(custom, group, plural, KARPENTER.name) for group, plural in KINDS] == [None, None]
    assert _get(custom, "karpenter.sh", "nodepools", FOREIGN) is not None  # not CLM's: never deleted
