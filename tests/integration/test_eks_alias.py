"""A zalando-eks cluster as Zalando CLM handles it, through the deployed workflows on the sandbox (IAM enforced), with
an alias that differs from its local_id and id:

- its name is its alias (CLM api/cluster.go Name()): the cluster stack creates the EKS cluster of that name (moto,
  with the sandbox's AWS::EKS::Cluster whose endpoint is a front door accepting EKS IAM tokens signed for that name
  only: clm_sandbox.eks_endpoint), CLM's functions reach the API server with tokens for the alias, node-pool stacks
  are tagged `kubernetes.io/cluster/<alias>` (provisioner/node_pools.go) while the cluster stack keeps the id
  (provisioner/aws.go applyClusterStack);
- after the cluster stack, CLM's ZalandoEKSCreationHook (provisioner/zalando_eks.go) writes eks_endpoint,
  eks_certificate_authority_data and eks_oidc_issuer_url into the registry, and the manifests see the API URL
  switched to the EKS endpoint and service_cidr from EKS, with hosted_zone from the registry's URL
  (provisioner/clusterpy.go provision);
- a new image rolls every node, drained through the EKS endpoint;
- decommission deletes the volumes tagged with the alias (clusterpy.go removeEBSVolumes) and the EKS cluster, and
  leaves a volume tagged with the id.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest
import urllib3
from kubernetes import client as k8s

from clm.kube.auth import eks_token
from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm.render.cfn_yaml import load_template
from clm_sandbox import eks_endpoint
from clm_sandbox.controlplane import ControlPlane
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import (
    ROOT,
    Deployment,
    as_role,
    instances,
    upload_new_ami,
    wait_for_ready_pods,
)

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

EKS_ID = "aws:123456789012:eu-central-1:eks-1"
LOCAL_ID = "eks-1"
ALIAS = "sandbox-eks"
REGISTRY_URL = "https://eks-1.sandbox.example.org"  # hosted_zone sandbox.example.org; not the API server's URL
SERVICE_CIDR = "10.96.0.0/16"  # EKS's (the template's), not moto's default
CONFIG = ROOT / "examples" / "config" / "cluster"
EKS_RESOURCES = """\
  EksRole:
    Type: AWS::IAM::Role
    Properties:
      Path: !ImportValue clm-cluster-role-path
      PermissionsBoundary: !ImportValue clm-cluster-role-boundary
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement:
        - {Effect: Allow, Principal: {Service: eks.amazonaws.com}, Action: sts:AssumeRole}
  Eks:
    Type: AWS::EKS::Cluster
    Properties:
      Name: {{ cluster.alias | yaml }}
      RoleArn: !GetAtt EksRole.Arn
      KubernetesNetworkConfig: {ServiceIpv4Cidr: "SERVICE_CIDR"}
      ResourcesVpcConfig:
        SubnetIds:
{%- for zone in zones %}
        - !Ref Subnet{{ az_id(zone) | upper }}
{%- endfor %}
""".replace("SERVICE_CIDR", SERVICE_CIDR)
FACTS = """\
  api-server-url: {{ cluster.api_server_url | yaml }}
  hosted-zone: {{ values.hosted_zone | yaml }}
  service-cidr: {{ cluster.config_items.get('service_cidr', '') | yaml }}
  eks-endpoint: {{ cluster.config_items.get('eks_endpoint', '') | yaml }}
"""


def upload_eks_config(deployment: Deployment) -> None:
    """The example configuration with an EKS cluster named by the alias in the cluster stack, the pool's group tagged
    with the alias (as CloudFormation propagates the node-pool stack's tags), and cluster-info showing what the
    manifests see."""
    stack = (CONFIG / "stack.yaml").read_text().replace("Outputs:\n", EKS_RESOURCES + "Outputs:\n")
    pool_file = CONFIG / "node-pools" / "worker-default" / "stack.yaml"
    pool = pool_file.read_text().replace(
        "('kubernetes.io/cluster/' ~ cluster.id)", "('kubernetes.io/cluster/' ~ cluster.alias)"
    )
    info_file = CONFIG / "manifests" / "cluster-config" / "cluster-info.yaml"
    info = info_file.read_text().replace("  id: {{ cluster.id | yaml }}\n", "  id: {{ cluster.id | yaml }}\n" + FACTS)
    s3 = deployment.session.client("s3")
    for path, body in ((CONFIG / "stack.yaml", stack), (pool_file, pool), (info_file, info)):
        key = "config/" + path.relative_to(ROOT / "examples" / "config").as_posix()
        s3.put_object(Bucket=deployment.outputs["ConfigBucketName"], Key=key, Body=body.encode())


def allow_eks_clusters(deployment: Deployment) -> None:
    """What an operator does for EKS cluster stacks (docs/deploy.md): deploy examples/eks/cluster-stack-policy.yaml
    and give its policy to the ClusterStackRole."""
    cfn, iam = deployment.session.client("cloudformation"), deployment.session.client("iam")
    body = (ROOT / "examples" / "eks" / "cluster-stack-policy.yaml").read_text()
    load_template(body)  # the example as it is
    cfn.create_stack(StackName="clm-eks-cluster-stacks", TemplateBody=body, Capabilities=["CAPABILITY_IAM"])
    [stack] = cfn.describe_stacks(StackName="clm-eks-cluster-stacks")["Stacks"]
    [policy] = [o["OutputValue"] for o in stack["Outputs"] if o["OutputKey"] == "PolicyArn"]
    [role] = [r["RoleName"] for r in iam.list_roles()["Roles"] if "ClusterStackRole" in r["RoleName"]]
    iam.attach_role_policy(RoleName=role, PolicyArn=policy)


def eks_cluster() -> Cluster:
    """examples/clusters.yaml's kube-1 as a zalando-eks cluster: id, local_id and alias all differ."""
    example = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    data = {**example.to_dict(), "id": EKS_ID, "local_id": LOCAL_ID, "alias": ALIAS, "provider": "zalando-eks"}
    data["api_server_url"] = REGISTRY_URL
    return Cluster.from_dict(data)


@pytest.fixture
def eks_api(control_plane: ControlPlane) -> Iterator[None]:
    """EKS clusters the sandbox's CloudFormation creates get a front door to the session's control plane."""
    with eks_endpoint.serving(control_plane.kubeconfig_path):
        yield


def status_with_token(endpoint: str, ca_data: str, token: str) -> int:
    """The status the EKS endpoint answers GET /api with `token`."""
    pool = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_cert_data=base64.b64decode(ca_data).decode())
    return pool.request("GET", f"{endpoint}/api", headers={"Authorization": f"Bearer {token}"}, retries=False).status


def test_an_eks_cluster_is_named_by_its_alias_written_back_rolled_and_decommissioned(
    deployment: Deployment, eks_api: None, kube_api: k8s.ApiClient
) -> None:
    upload_eks_config(deployment)
    allow_eks_clusters(deployment)
    deployment.settle()
    with NodeSimulator(
        kube_api, deployment.session, ALIAS, boot_delay=1.0, pod_ready_delay=0.2, time_scale=0.1
    ) as nodes:
        deployment.registry.put(eks_cluster())
        runs = deployment.settle(known=0)
        succeeded(deployment, runs)
        nodes.wait_for_ready_nodes(3, timeout=30)
        wait_for_ready_pods(kube_api, 3)

        eks = deployment.session.client("eks")
        described = eks.describe_cluster(name=ALIAS)["cluster"]
        assert described["tags"][f"kubernetes.io/cluster/{EKS_ID}"] == "owned"  # the cluster stack's tag
        registry = deployment.registry.get(EKS_ID)
        assert registry.api_server_url == REGISTRY_URL
        assert {k: v for k, v in registry.config_items.items() if k.startswith("eks_")} == {
            "eks_endpoint": described["endpoint"],
            "eks_certificate_authority_data": described["certificateAuthority"]["data"],
            "eks_oidc_issuer_url": described["identity"]["oidc"]["issuer"],
        }
        info = k8s.CoreV1Api(kube_api).read_namespaced_config_map("cluster-info", "kube-system").data
        assert info["api-server-url"] == info["eks-endpoint"] == described["endpoint"]
        assert (info["hosted-zone"], info["service-cidr"]) == ("sandbox.example.org", SERVICE_CIDR)
        cfn = deployment.session.client("cloudformation")
        tags = {s["StackName"]: {t["Key"]: t["Value"] for t in s["Tags"]} for s in cfn.describe_stacks()["Stacks"]}
        pool_stack = tags["nodepool-default-worker-aws-123456789012-eu-central-1-eks-1"]
        assert (
            pool_stack[f"kubernetes.io/cluster/{ALIAS}"] == "owned"
            and f"kubernetes.io/cluster/{EKS_ID}" not in pool_stack
        )
        assert tags[LOCAL_ID][f"kubernetes.io/cluster/{EKS_ID}"] == "owned"

        kube_role = next(
            r["Arn"] for r in deployment.session.client("iam").list_roles()["Roles"] if "KubeFunction" in r["RoleName"]
        )
        signer = as_role(kube_role, "eks-test")
        ca = described["certificateAuthority"]["data"]
        assert status_with_token(described["endpoint"], ca, eks_token(signer, ALIAS)) == 200
        assert status_with_token(described["endpoint"], ca, eks_token(signer, LOCAL_ID)) == 401  # not its name

        before = instances(deployment.session)
        known = len(deployment.executions(deployment.provision))
        upload_new_ami(deployment)
        runs = deployment.settle(known)
        succeeded(deployment, runs)
        after = instances(deployment.session)
        assert len(after) == 3 and not after & before  # every node replaced
        wait_for_ready_pods(kube_api, 3)

        ec2 = deployment.session.client("ec2")
        volumes = {owner: _volume(ec2, owner) for owner in (ALIAS, EKS_ID)}
        cluster = deployment.registry.get(EKS_ID)
        known = len(deployment.executions(deployment.provision))
        items = {**cluster.config_items, "remove_volumes": "true"}
        data = {**cluster.to_dict(), "lifecycle_status": "decommission-requested", "config_items": items}
        deployment.registry.put(Cluster.from_dict(data))
        runs = deployment.settle(known)
        succeeded(deployment, runs)
    assert deployment.registry.get(EKS_ID).lifecycle_status == "decommissioned"
    left = {v["VolumeId"] for v in ec2.describe_volumes()["Volumes"]}
    assert volumes[EKS_ID] in left and volumes[ALIAS] not in left
    assert ALIAS not in eks.list_clusters()["clusters"]
    stacks = {s["StackName"] for s in cfn.describe_stacks()["Stacks"]}
    assert stacks == {"Clm", "clm-eks-cluster-stacks"}
    decommission = [
        m for m in deployment.sfn.list_state_machines()["stateMachines"] if m["name"].endswith("-decommission")
    ]
    [child] = deployment.executions(decommission[0]["stateMachineArn"])
    output = json.loads(deployment.sfn.describe_execution(executionArn=child["executionArn"])["output"])
    assert output["provisioned"] == {"proof": f"stack {LOCAL_ID} exists; EKS cluster {ALIAS} is the cluster's"}


def succeeded(deployment: Deployment, runs: list[dict]) -> None:
    """Every run succeeded (else the cluster's last problem is the message)."""
    problems = deployment.registry.get(EKS_ID).status.problems
    assert runs and all(r["status"] == "SUCCEEDED" for r in runs), problems[-1].title if problems else runs


def _volume(ec2: object, owner: str) -> str:
    tags = [{"Key": f"kubernetes.io/cluster/{owner}", "Value": "owned"}, {"Key": "KubernetesCluster", "Value": owner}]
    spec = [{"ResourceType": "volume", "Tags": tags}]
    return ec2.create_volume(AvailabilityZone="eu-central-1a", Size=1, TagSpecifications=spec)["VolumeId"]  # type: ignore[attr-defined]
