"""A registry writer cannot make a decommission destroy what CLM does not manage: an item naming another team's
cluster (its id, local_id and alias), `remove_volumes: "true"` and `decommission-requested`, with the kubeconfig
secret of a cluster CLM does manage. CLM never provisioned that cluster (no cluster stack with its ownership tags),
so the run ends with a problem saying so and nothing is touched: the victim's Karpenter instance, its ingress
controller's stack, its volume and its VPC CNI interface, and the managed cluster's kube-system, listed before and
after. Before, the decommission scaled kube-system down, terminated the instance and deleted the stack, the volume
and the interface (CLM's own decommission has no such check: provisioner/clusterpy.go Decommission)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from kubernetes import client as k8s

from clm.registry.clusters_yaml import load_clusters
from tests.integration.deployment import ROOT, Deployment

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

VICTIM = "aws:123456789012:eu-central-1:team-b"
CLUSTER_TAG = f"kubernetes.io/cluster/{VICTIM}"
INGRESS_BODY = "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: team-b-lb\n"
CONTROLLER = "victim-controller"


def tags(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": value} for key, value in values.items()]


def victims_resources(session: Any) -> None:
    """What team B's cluster has in the account, made with the admin session."""
    ec2 = session.client("ec2")
    image = ec2.describe_images()["Images"][0]["ImageId"]
    karpenter = tags({CLUSTER_TAG: "owned", "karpenter.sh/nodepool": "default"})
    ec2.run_instances(
        ImageId=image, MinCount=1, MaxCount=1, TagSpecifications=[{"ResourceType": "instance", "Tags": karpenter}]
    )
    volume = tags({CLUSTER_TAG: "owned", "KubernetesCluster": VICTIM})
    ec2.create_volume(
        AvailabilityZone="eu-central-1a", Size=1, TagSpecifications=[{"ResourceType": "volume", "Tags": volume}]
    )
    vpc = ec2.create_vpc(CidrBlock="10.98.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.98.0.0/24")["Subnet"]["SubnetId"]
    eni = tags({"cluster.k8s.amazonaws.com/name": "team-b"})
    ec2.create_network_interface(
        SubnetId=subnet, TagSpecifications=[{"ResourceType": "network-interface", "Tags": eni}]
    )
    session.client("cloudformation").create_stack(
        StackName="kube-ing-team-b",
        TemplateBody=INGRESS_BODY,
        Tags=tags({CLUSTER_TAG: "owned", "kubernetes:application": "kube-ingress-aws-controller"}),
    )


def observed(session: Any, apps: k8s.AppsV1Api) -> dict[str, Any]:
    """Everything of the account and the managed cluster a decommission could touch."""
    ec2 = session.client("ec2")
    return {
        "instances": sorted(
            (i["InstanceId"], i["State"]["Name"])
            for r in ec2.describe_instances()["Reservations"]
            for i in r["Instances"]
        ),
        "volumes": sorted(v["VolumeId"] for v in ec2.describe_volumes()["Volumes"]),
        "interfaces": sorted(e["NetworkInterfaceId"] for e in ec2.describe_network_interfaces()["NetworkInterfaces"]),
        "stacks": sorted(
            (s["StackName"], s["StackStatus"]) for s in session.client("cloudformation").describe_stacks()["Stacks"]
        ),
        "kube-system": {d.metadata.name: d.spec.replicas for d in apps.list_namespaced_deployment("kube-system").items},
    }


def test_a_made_up_decommission_cleans_up_nothing(deployment: Deployment, kube_api: k8s.ApiClient) -> None:
    apps = k8s.AppsV1Api(kube_api)
    labels = {"app": CONTROLLER}
    pod = k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="registry.k8s.io/pause:3.9")])
    apps.create_namespaced_deployment(
        "kube-system",
        k8s.V1Deployment(
            metadata=k8s.V1ObjectMeta(name=CONTROLLER),
            spec=k8s.V1DeploymentSpec(
                replicas=1,
                selector=k8s.V1LabelSelector(match_labels=labels),
                template=k8s.V1PodTemplateSpec(metadata=k8s.V1ObjectMeta(labels=labels), spec=pod),
            ),
        ),
    )
    try:
        victims_resources(deployment.session)
        before = observed(deployment.session, apps)
        example = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
        made_up = dataclasses.replace(
            example,
            id=VICTIM,
            local_id="team-b",
            alias="team-b",
            provider="zalando-eks",
            lifecycle_status="decommission-requested",
            config_items={**example.config_items, "remove_volumes": "true", "kube_auth_secret": "clm/kube-1"},
        )
        known = len(deployment.executions(deployment.provision))
        deployment.registry.put(made_up)
        runs = deployment.settle(known)
        assert [e["status"] for e in runs].count("FAILED") == 1, [(e["status"], e.get("error")) for e in runs]
        problem = deployment.registry.get(VICTIM).status.problems[-1].title
        assert problem.startswith(
            f"ClusterNotManaged: cluster {VICTIM}: nothing cleaned up: no stack team-b tagged {CLUSTER_TAG}=owned, "
            "clm:managed-by=clm exists or was deleted"
        ), problem
        assert observed(deployment.session, apps) == before
        assert deployment.registry.get(VICTIM).lifecycle_status == "decommission-requested"
    finally:
        apps.delete_namespaced_deployment(CONTROLLER, "kube-system")
