"""The sandbox's EKS endpoint (clm_sandbox.eks_endpoint): like EKS, it accepts only aws-iam-authenticator tokens
signed by a role session of moto's STS for its own cluster's name, and forwards those with the control plane's own
token; anything else is answered 401 and never reaches the API server. And the sandbox's AWS::EKS::Cluster
(clm_sandbox.patches.cfn_eks_cluster) names that endpoint, with the stack's tags on the cluster."""

from __future__ import annotations

import base64
import datetime
import json

import boto3
import urllib3

from clm.kube.auth import eks_token
from clm_sandbox import eks_endpoint
from clm_sandbox.eks_endpoint import FrontDoor, Upstream, token_names
from tests.endpoints import attacker_endpoint

TRUST = {"Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}


def role_session(aws: boto3.Session) -> boto3.Session:
    role = aws.client("iam").create_role(RoleName="kube", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    credentials = aws.client("sts").assume_role(RoleArn=role, RoleSessionName="kube-fn")["Credentials"]
    return boto3.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=aws.region_name,
    )


def test_a_token_names_the_cluster_it_was_signed_for_and_expires(aws) -> None:
    session = role_session(aws)
    token = eks_token(session, "team-a")
    assert token_names(token, "team-a")
    assert not token_names(token, "team-b")  # signed for another name
    assert not token_names(eks_token(aws, "team-a"), "team-a")  # not a role session of moto's STS
    assert not token_names(token[:-4] + "AAAA", "team-a")  # tampered
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=16)
    assert not token_names(token, "team-a", now=later)
    assert not token_names("k8s-aws-v1.not-base64!", "team-a")


def test_the_door_forwards_only_its_clusters_tokens_with_the_control_planes(aws) -> None:
    session = role_session(aws)
    with attacker_endpoint(lifetime=30) as api_server:
        door = FrontDoor("team-a", Upstream(api_server.url, api_server.ca_pem, "admin-token"))
        try:
            http = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_cert_data=door.ca_pem.decode())

            def get(token: str) -> int:
                headers = {"Authorization": f"Bearer {token}"}
                return http.request("GET", f"{door.url}/api", headers=headers, retries=False).status

            assert get(eks_token(session, "team-b")) == 401
            assert get("admin-token") == 401
            assert api_server.requests == []
            assert get(eks_token(session, "team-a")) == 200
            assert api_server.requests == [("/api", "Bearer admin-token")]
        finally:
            door.close()


def test_a_stacks_eks_cluster_gets_the_door_and_the_stacks_tags(sandbox_aws, tmp_path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    config = {
        "clusters": [{"cluster": {"server": "https://127.0.0.1:1", "certificate-authority-data": ""}}],
        "users": [{"user": {"token": "t"}}],
    }
    kubeconfig.write_text(json.dumps(config))
    template = {
        "Resources": {
            "Eks": {
                "Type": "AWS::EKS::Cluster",
                "Properties": {
                    "Name": "team-a",
                    "RoleArn": "arn:aws:iam::123456789012:role/eks",
                    "ResourcesVpcConfig": {"SubnetIds": []},
                    "KubernetesNetworkConfig": {"ServiceIpv4Cidr": "10.96.0.0/16"},
                },
            }
        },
        "Outputs": {"Endpoint": {"Value": {"Fn::GetAtt": ["Eks", "Endpoint"]}}},
    }
    cfn, eks = sandbox_aws.client("cloudformation"), sandbox_aws.client("eks")
    with eks_endpoint.serving(kubeconfig):
        cfn.create_stack(StackName="s", TemplateBody=json.dumps(template), Tags=[{"Key": "owner", "Value": "x"}])
        described = eks.describe_cluster(name="team-a")["cluster"]
        assert described["endpoint"].startswith("https://127.0.0.1:")
        assert base64.b64decode(described["certificateAuthority"]["data"]).startswith(b"-----BEGIN CERTIFICATE")
        assert described["tags"] == {"owner": "x"}
        assert described["kubernetesNetworkConfig"]["serviceIpv4Cidr"] == "10.96.0.0/16"
        [output] = cfn.describe_stacks(StackName="s")["Stacks"][0]["Outputs"]
        assert output["OutputValue"] == described["endpoint"]
        cfn.delete_stack(StackName="s")
        assert eks.list_clusters()["clusters"] == []
