"""Decommission as CLM (provisioner/clusterpy.go decommission): kube-system's Deployments scaled to zero first, the
node-pool stacks and the cluster stack deleted, then the VPC CNI's leaked network interfaces (provisioner/aws.go
DeleteLeakedAWSVPCCNIENIs) and, when asked (CLM's --remove-volumes: config item remove_volumes), the cluster's
volumes; other clusters' interfaces and volumes stay."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from kubernetes import client as k8s

from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import Deployment, provisioned, register_example_cluster, the_run

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

CONTROLLER = "test-controller"  # a kube-system Deployment, as a load balancer or volume controller would be


def controller() -> k8s.V1Deployment:
    labels = {"app": CONTROLLER}
    container = k8s.V1Container(name="c", image="registry.k8s.io/pause:3.9")
    return k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name=CONTROLLER),
        spec=k8s.V1DeploymentSpec(
            replicas=2,
            selector=k8s.V1LabelSelector(match_labels=labels),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels=labels), spec=k8s.V1PodSpec(containers=[container])
            ),
        ),
    )


def leftovers(ec2: Any, cluster_id: str) -> dict[str, str]:
    """Interfaces and volumes a cluster's workloads leave, and the same of another cluster; ids by role."""
    vpc = ec2.create_vpc(CidrBlock="10.99.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.99.0.0/24")["Subnet"]["SubnetId"]

    def eni(name: str) -> str:
        tags = [{"Key": "cluster.k8s.amazonaws.com/name", "Value": name}]
        spec = [{"ResourceType": "network-interface", "Tags": tags}]
        return ec2.create_network_interface(SubnetId=subnet, TagSpecifications=spec)["NetworkInterface"][
            "NetworkInterfaceId"
        ]

    def volume(owner: str) -> str:
        tags = [
            {"Key": f"kubernetes.io/cluster/{owner}", "Value": "owned"},
            {"Key": "KubernetesCluster", "Value": owner},
        ]
        spec = [{"ResourceType": "volume", "Tags": tags}]
        return ec2.create_volume(AvailabilityZone="eu-central-1a", Size=1, TagSpecifications=spec)["VolumeId"]

    return {
        "leaked": eni(cluster_id),
        "other_eni": eni("another-cluster"),
        "volume": volume(cluster_id),
        "other_volume": volume("another-cluster"),
    }


def test_decommission_scales_kube_system_down_deletes_stacks_then_leftovers(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    register_example_cluster(deployment)
    provisioned(deployment, nodes, kube_api)
    apps = k8s.AppsV1Api(kube_api)
    apps.create_namespaced_deployment("kube-system", controller())
    try:
        ec2 = deployment.session.client("ec2")
        ids = leftovers(ec2, deployment.cluster_id)
        cluster = deployment.registry.get(deployment.cluster_id)
        known = len(deployment.executions(deployment.provision))
        items = {**cluster.config_items, "remove_volumes": "true"}  # as `clm decommission --remove-volumes` sets it
        deployment.registry.put(
            dataclasses.replace(cluster, lifecycle_status="decommission-requested", config_items=items)
        )
        run = the_run(deployment.settle(known))
        assert json.loads(run["output"])["plan"]["action"] == "decommission"
        assert apps.read_namespaced_deployment(CONTROLLER, "kube-system").spec.replicas == 0
    finally:
        apps.delete_namespaced_deployment(CONTROLLER, "kube-system")
    machines = deployment.sfn.list_state_machines()["stateMachines"]
    [decommission] = [m["stateMachineArn"] for m in machines if m["name"].endswith("-decommission")]
    [child] = deployment.executions(decommission)
    states = deployment.states(child["executionArn"])
    assert [s for s in states if s in {"VerifyProvisioned", "ScaleDownKubeSystem", "DecommissionPools", "CleanUp"}] == [
        "VerifyProvisioned",
        "ScaleDownKubeSystem",
        "DecommissionPools",
        "CleanUp",
    ]
    output = json.loads(deployment.sfn.describe_execution(executionArn=child["executionArn"])["output"])
    assert output["scaled_down"] == {"namespace": "kube-system", "scaled_down": [CONTROLLER]}
    assert output["provisioned"] == {"proof": "stack kube-1 exists"}
    assert output["cleaned_up"] == {"interfaces": [ids["leaked"]], "volumes": [ids["volume"]], "volumes_left": []}
    stacks = [s["StackName"] for s in deployment.session.client("cloudformation").describe_stacks()["Stacks"]]
    assert stacks == ["Clm"]
    interfaces = {eni["NetworkInterfaceId"] for eni in ec2.describe_network_interfaces()["NetworkInterfaces"]}
    assert ids["other_eni"] in interfaces and ids["leaked"] not in interfaces
    volumes = {v["VolumeId"] for v in ec2.describe_volumes()["Volumes"]}
    assert ids["other_volume"] in volumes and ids["volume"] not in volumes
    assert deployment.registry.get(deployment.cluster_id).lifecycle_status == "decommissioned"
