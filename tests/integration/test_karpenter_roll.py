"""A Karpenter pool beside an auto scaling group pool, through the deployed workflows on the sandbox: `clm plan` names
the Karpenter nodes a new image outdates and why; the run that the new image's upload starts rolls both pools (the
Karpenter nodes drained as the group's, each terminated through EC2 exactly once, the replacements launched by the
node simulator's Karpenter stand-in for the evicted pods) without a PDB violation; decommission leaves no instance."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from kubernetes import client as k8s

from clm.cli.main import cli
from clm.model import Cluster, NodePool
from clm.registry.clusters_yaml import dump_clusters, load_clusters
from clm_sandbox.nodesim import NodeSimulator
from clm_sandbox.nodesim.karpenter_crds import install_karpenter_crds, remove_karpenter_objects
from tests.integration.deployment import (
    ROOT,
    TERMINATED_AT,
    Deployment,
    HealthyPods,
    the_run,
    upload_new_ami,
    wait_for_ready_pods,
)

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

OLD_AMI, NEW_AMI = "ami-0c1a7f89451184c8b", "ami-0d2b8f9a562295d9c"  # tests.integration.deployment.upload_new_ami
POOL = NodePool("kp", "worker-karpenter", 0, 0, [], config_items={})
ZONES = ("eu-central-1a", "eu-central-1b")
NAMESPACE = "karp"
# A Custom AMI family, as Zalando's profile: Karpenter passes the user data unchanged, so CLM compares it too.
PROVISIONERS = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: {{ node_pool.name }}
spec:
  amiFamily: Custom
  amiSelectorTerms:
  - id: {{ cluster.config_items.worker_ami }}
  tags:
    node.kubernetes.io/node-pool: {{ node_pool.name }}
  userData: |
{{ values.UserData | indent(4, true) }}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: {{ node_pool.name }}
spec:
  template:
    metadata:
      labels:
        node.kubernetes.io/node-pool: {{ node_pool.name }}
        lifecycle-status: ready
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: {{ node_pool.name }}}
      taints: [{key: dedicated, value: {{ node_pool.name }}, effect: NoSchedule}]
      requirements:
      - {key: topology.kubernetes.io/zone, operator: In, values: [eu-central-1a, eu-central-1b]}
"""
USERDATA = "#cloud-config\nwrite_files: [{path: /etc/pool, content: {{ node_pool.name }}}]\n"
PROFILE = "cluster/node-pools/worker-karpenter"


@pytest.fixture
def karpenter_nodes(deployment: Deployment, kube_api: k8s.ApiClient) -> Iterator[NodeSimulator]:
    """Karpenter's CRDs and Deployment (kube-system/karpenter: the stand-in runs while it has replicas), and simulated
    kubelets for the cluster's groups and its Karpenter stand-in."""
    install_karpenter_crds(kube_api)
    apps = k8s.AppsV1Api(kube_api)
    labels = {"app": "karpenter"}
    controller = k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="karpenter"),
        spec=k8s.V1DeploymentSpec(
            replicas=1,
            selector=k8s.V1LabelSelector(match_labels=labels),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels=labels),
                spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="controller", image="registry.invalid/k:1")]),
            ),
        ),
    )
    apps.create_namespaced_deployment("kube-system", controller)
    with NodeSimulator(
        kube_api,
        deployment.session,
        deployment.cluster_id,
        boot_delay=1.0,
        pod_ready_delay=0.2,
        time_scale=0.1,
        karpenter=True,
    ) as simulator:
        yield simulator
    apps.delete_namespaced_deployment("karpenter", "kube-system")
    k8s.CoreV1Api(kube_api).delete_namespace(NAMESPACE)
    remove_karpenter_objects(kube_api)


def _workloads(kube_api: k8s.ApiClient, zones: tuple[str, ...] = ZONES, *, replicas: int = 2) -> None:
    """One Deployment per zone pinned to the Karpenter pool, so one node each (with 2 replicas, a PDB of
    minAvailable 1 each)."""
    core, apps, custom = k8s.CoreV1Api(kube_api), k8s.AppsV1Api(kube_api), k8s.CustomObjectsApi(kube_api)
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=NAMESPACE)))
    for zone in zones:
        labels = {"app": f"inflate-{zone[-1]}"}
        selector = {"karpenter.sh/nodepool": POOL.name, "topology.kubernetes.io/zone": zone}
        spec = k8s.V1PodSpec(
            node_selector=selector,
            tolerations=[k8s.V1Toleration(key="dedicated", value=POOL.name, effect="NoSchedule")],
            termination_grace_period_seconds=1,
            containers=[k8s.V1Container(name="app", image="registry.invalid/app:1")],
        )
        template = k8s.V1PodTemplateSpec(metadata=k8s.V1ObjectMeta(labels=labels), spec=spec)
        deployment = k8s.V1Deployment(
            metadata=k8s.V1ObjectMeta(name=labels["app"]),
            spec=k8s.V1DeploymentSpec(
                replicas=replicas, selector=k8s.V1LabelSelector(match_labels=labels), template=template
            ),
        )
        apps.create_namespaced_deployment(NAMESPACE, deployment)
        if replicas < 2:
            continue
        budget = {  # policy/v1beta1: what the 1.20 control plane serves
            "apiVersion": "policy/v1beta1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": labels["app"]},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
        }
        custom.create_namespaced_custom_object("policy", "v1beta1", NAMESPACE, "poddisruptionbudgets", budget)


def _karpenter_instances(deployment: Deployment, *states: str) -> set[str]:
    ec2 = deployment.session.client("ec2")
    filters = [
        {"Name": "tag:karpenter.sh/nodepool", "Values": [POOL.name]},
        {"Name": "instance-state-name", "Values": list(states or ("pending", "running"))},
    ]
    return {i["InstanceId"] for r in ec2.describe_instances(Filters=filters)["Reservations"] for i in r["Instances"]}


def _terminated(deployment: Deployment) -> Counter[str]:
    """How often the roll workflow terminated each instance (its Terminate state, or its drain's)."""
    counts: Counter[str] = Counter()
    for execution in deployment.executions(deployment.roll_node_pool):
        pages = deployment.sfn.get_paginator("get_execution_history").paginate(executionArn=execution["executionArn"])
        for event in (e for page in pages for e in page["events"]):
            details = event.get("stateEnteredEventDetails") or {}
            if details.get("name") in TERMINATED_AT:
                counts[json.loads(details["input"])["replacement"]["instance_id"]] += 1
    return counts


def _plan(deployment: Deployment, tmp_path: Path) -> dict:
    """`clm plan` with the new image in a local copy of the configuration (the run has not seen it)."""
    config = tmp_path / "config"
    shutil.copytree(ROOT / "examples" / "config", config)
    (config / PROFILE).mkdir(parents=True)
    (config / PROFILE / "provisioners.yaml").write_text(PROVISIONERS)
    (config / PROFILE / "userdata.yaml").write_text(USERDATA)
    defaults = config / "cluster" / "config-defaults.yaml"
    defaults.write_text(defaults.read_text().replace(OLD_AMI, NEW_AMI))
    registry_file = tmp_path / "clusters.yaml"
    registry_file.write_text(dump_clusters([deployment.registry.get(deployment.cluster_id)], with_status=False))
    args = ["-o", "json", "plan", deployment.cluster_id, "--config", str(config), "--registry-file", str(registry_file)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


def _provisioned_with_pool(deployment: Deployment, karpenter_nodes: NodeSimulator, kube_api: k8s.ApiClient) -> Cluster:
    """The example kube-1 with the Karpenter pool, its first run done (stacks, manifests, the pool's objects)."""
    s3 = deployment.session.client("s3")
    for name, body in (("provisioners.yaml", PROVISIONERS), ("userdata.yaml", USERDATA)):
        s3.put_object(Bucket=deployment.outputs["ConfigBucketName"], Key=f"config/{PROFILE}/{name}", Body=body.encode())
    deployment.settle()  # the uploads' reconciles (no cluster yet)
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster.config_items.update(kube_auth_secret="clm/kube-1", karpenter_pools_enabled="true")
    cluster = dataclasses.replace(cluster, node_pools=[*cluster.node_pools, POOL])
    deployment.registry.put(cluster)
    the_run(deployment.settle(known=0))  # a new cluster: no roll
    karpenter_nodes.wait_for_ready_nodes(3, timeout=30)
    wait_for_ready_pods(kube_api, 3)
    return cluster


def test_both_pools_roll_on_a_new_image_and_decommission_leaves_no_instance(
    deployment: Deployment, karpenter_nodes: NodeSimulator, kube_api: k8s.ApiClient, tmp_path: Path
) -> None:
    _provisioned_with_pool(deployment, karpenter_nodes, kube_api)
    _workloads(kube_api)
    for zone in ZONES:
        wait_for_ready_pods(kube_api, 2, timeout=60, namespace=NAMESPACE, selector=f"app=inflate-{zone[-1]}")
    before = _karpenter_instances(deployment)
    assert len(before) == 2  # one node per zone

    plan = _plan(deployment, tmp_path)
    [pool] = [p for p in plan["node_pools"] if p["node_pool"] == POOL.name]
    assert pool["karpenter"] and pool["outdated"] == 2
    assert {i["id"]: i["reasons"] for i in pool["instances"]} == {
        instance: [f"image {OLD_AMI}, EC2NodeClass kp selects {NEW_AMI}"] for instance in before
    }

    known = len(deployment.executions(deployment.provision))
    watchers = [HealthyPods(kube_api)] + [HealthyPods(kube_api, NAMESPACE, f"app=inflate-{zone[-1]}") for zone in ZONES]
    for watcher in watchers:
        watcher.start()
    try:  # the upload starts reconcile, which starts provision
        upload_new_ami(deployment)
        execution = the_run(deployment.settle(known, timeout=360))
    finally:
        for watcher in watchers:
            watcher.stop()
    web, *inflate = watchers
    assert web.lowest is not None and web.lowest >= 2  # the example's PDB: minAvailable 2 of 3
    assert all(w.samples > 10 and w.lowest is not None and w.lowest >= 1 for w in inflate)  # minAvailable 1 of 2
    assert deployment.states(execution["executionArn"]).count("RollNodePool") == 2  # the group's pool, then kp
    terminated = _terminated(deployment)
    assert {i: terminated[i] for i in before} == dict.fromkeys(before, 1)  # every outdated one exactly once
    assert sum(terminated.values()) == 3 + 2  # and nothing else: the group's three, the Karpenter pool's two
    after = _karpenter_instances(deployment)
    assert len(after) == 2 and not after & before
    images = deployment.session.client("ec2").describe_instances(InstanceIds=sorted(after))["Reservations"]
    assert {i["ImageId"] for r in images for i in r["Instances"]} == {NEW_AMI}

    known = len(deployment.executions(deployment.provision))
    current = deployment.registry.get(deployment.cluster_id)
    deployment.registry.put(dataclasses.replace(current, lifecycle_status="decommission-requested"))
    the_run(deployment.settle(known))
    assert "TerminateKarpenterNodes" in _decommission_states(deployment)
    assert _karpenter_instances(deployment, "pending", "running", "stopping", "stopped") == set()
    assert deployment.registry.get(deployment.cluster_id).lifecycle_status == "decommissioned"


def _decommission_states(deployment: Deployment) -> list[str]:
    """The states the decommission workflow (a child of provision) entered."""
    machines = deployment.sfn.list_state_machines()["stateMachines"]
    [arn] = [m["stateMachineArn"] for m in machines if m["name"].endswith("-decommission")]
    return [state for e in deployment.executions(arn) for state in deployment.states(e["executionArn"])]


def test_a_removed_pool_launches_nothing_more_its_nodes_are_drained_then_its_objects_deleted(
    deployment: Deployment, karpenter_nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    cluster = _provisioned_with_pool(deployment, karpenter_nodes, kube_api)
    _workloads(kube_api, ZONES[:1], replicas=1)  # pinned to the pool: nowhere to go once it is removed
    wait_for_ready_pods(kube_api, 1, timeout=60, namespace=NAMESPACE, selector="app=inflate-a")
    [node] = _karpenter_instances(deployment)

    known = len(deployment.executions(deployment.provision))
    ready = deployment.registry.get(deployment.cluster_id)
    deployment.registry.put(dataclasses.replace(ready, node_pools=cluster.node_pools[:-1]))
    execution = the_run(deployment.settle(known))

    applied = _phase_results(deployment, execution["executionArn"], "karpenter_pools")
    assert applied[-1]["limited"] == [f"NodePool {POOL.name}"] and applied[-1]["deleted"] == []
    assert _terminated(deployment) == {node: 1}  # drained by the roll, then terminated through EC2
    assert _karpenter_instances(deployment) == set()  # the evicted pod got no new node: the NodePool launches none
    pods = k8s.CoreV1Api(kube_api).list_namespaced_pod(NAMESPACE, label_selector="app=inflate-a").items
    assert [p.status.phase for p in pods] == ["Pending"]
    custom = k8s.CustomObjectsApi(kube_api)
    for group, plural in (("karpenter.sh", "nodepools"), ("karpenter.k8s.aws", "ec2nodeclasses")):
        assert custom.list_cluster_custom_object(group, "v1", plural)["items"] == []  # deleted after the drain


def _phase_results(deployment: Deployment, execution: str, phase: str) -> list[dict]:
    """The results of the execution's ApplyPhase tasks for `phase`."""
    pages = deployment.sfn.get_paginator("get_execution_history").paginate(executionArn=execution)
    results = []
    for event in (e for page in pages for e in page["events"]):
        output = json.loads((event.get("lambdaFunctionSucceededEventDetails") or {}).get("output") or "{}")
        if isinstance(output, dict) and output.get("phase") == phase:
            results.append(output)
    return results
