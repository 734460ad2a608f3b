"""CLM's EC2-backed template functions in the deployed workflow, IAM enforced: a component calling `ami_id` (CLM's
amiID: DescribeImages by name and owner), `instance_type_memory_quantity` / `instance_type_cpu_quantity`
(DescribeInstanceTypes), the network values (DescribeVpcs, DescribeSubnets: the default VPC's zones and CIDR),
`values.load_balancer_certificate` (ACM) and `values.etcd_kms_key_arn` (KMS, through alias/etcd-cluster) renders in
the run function with the grants infra/ gives it, and the cluster gets what AWS says; a name EC2 does not know
fails the run with a problem naming the file and line."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from clm_sandbox.iam import record
from tests.integration.deployment import Deployment, first_run_config_map

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

ACCOUNT = "123456789012"
IMAGE = "clm-lookup-test-image"
COMPONENT_KEY = "config/cluster/manifests/lookup-test/configmap.yaml"
CONFIGMAP = f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: lookup-test
  namespace: default
data:
  image: {{{{ ami_id("{IMAGE}", "{ACCOUNT}") | yaml }}}}
  memory: {{{{ instance_type_memory_quantity("m5.large") | yaml }}}}
  cpu: {{{{ scale_quantity(instance_type_cpu_quantity("m5.large"), 0.5) | yaml }}}}
  zones: {{{{ values.availability_zones | join(",") | yaml }}}}
  cidr: {{{{ values.vpc_ipv4_cidr | yaml }}}}
  certificate: {{{{ values.load_balancer_certificate | yaml }}}}
  etcd_key: {{{{ values.etcd_kms_key_arn | yaml }}}}
"""
PRIVATE_CA = f"arn:aws:acm-pca:eu-central-1:{ACCOUNT}:certificate-authority/clm-test"  # moto issues these at once


def test_the_run_function_looks_up_what_templates_ask_aws(
    deployment: Deployment, nodes: object, kube_api: k8s.ApiClient
) -> None:
    ec2 = deployment.session.client("ec2")
    source = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    image = ec2.create_image(InstanceId=source, Name=IMAGE)["ImageId"]
    ec2.terminate_instances(InstanceIds=[source])
    acm, kms = deployment.session.client("acm"), deployment.session.client("kms")
    acm.request_certificate(DomainName="*.example.org", CertificateAuthorityArn=PRIVATE_CA)
    certificate = acm.request_certificate(DomainName="*.sandbox.example.org", CertificateAuthorityArn=PRIVATE_CA)
    etcd_key = kms.create_key()["KeyMetadata"]
    kms.create_alias(AliasName="alias/etcd-cluster", TargetKeyId=etcd_key["KeyId"])
    with first_run_config_map(deployment, kube_api, COMPONENT_KEY, CONFIGMAP, "lookup-test") as data:
        [vpc] = ec2.describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"]  # no vpc_id item
        zones = {
            s["AvailabilityZone"]
            for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc["VpcId"]]}])["Subnets"]
        }
        assert data == {
            "image": image,
            "memory": "8Gi",
            "cpu": "1",
            "zones": ",".join(sorted(zones)),
            "cidr": vpc["CidrBlock"],
            "certificate": certificate["CertificateArn"],  # the most specific for kube-1.sandbox.example.org
            "etcd_key": etcd_key["Arn"],
        }
        looked_up = {j.action for j in record.judged() if not j.refused}
        assert {
            "ec2:DescribeImages",
            "ec2:DescribeInstanceTypes",
            "ec2:DescribeVpcs",
            "ec2:DescribeSubnets",
            "acm:ListCertificates",
            "acm:DescribeCertificate",
            "kms:DescribeKey",
        } <= looked_up

        known = len(deployment.executions(deployment.provision))
        s3, bucket = deployment.session.client("s3"), deployment.outputs["ConfigBucketName"]
        s3.put_object(Bucket=bucket, Key=COMPONENT_KEY, Body=CONFIGMAP.replace(IMAGE, "no-such-image").encode())
        failed = [e for e in deployment.settle(known=known) if e["status"] == "FAILED"]
        assert failed, "the run naming an unknown image did not fail"
        problem = deployment.registry.get(deployment.cluster_id).status.problems[-1].title
        assert "cluster/manifests/lookup-test/configmap.yaml:7" in problem, problem
        assert f"no image found with name: no-such-image and owner: {ACCOUNT}" in problem, problem
