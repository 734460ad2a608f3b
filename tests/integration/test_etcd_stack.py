"""CLM's etcd stack (clm:manageEtcdStack) on the sandbox with IAM enforced: the example config with a small
cluster/etcd/stack.yaml (a security group, CLM's tags in Metadata, the archive's path as a tag) and files.yaml (one
plain entry, one encrypted), the etcd key created under alias/etcd-cluster. The run creates `etcd-cluster-etcd`
before the cluster stack, with CLM's tags and stack policy; the archive at CLM's key holds the plain file and
`<path>.enc`, which KMS decrypts with the etcd key. A second run that changes nothing for etcd uploads nothing and
leaves the stack alone. `clm plan` shows the etcd stack first, to be created before the run (uploading nothing) and
unchanged after it. With the setting off, none of it happens and the plan has no etcd stack."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import re
import secrets
import tarfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from clm.cli.main import cli
from clm.model import Cluster
from clm.registry.clusters_yaml import dump_clusters, load_clusters
from clm_sandbox.deploy.synth import Assembly, synthesize
from tests.integration.deployment import ROOT, Deployment
from tests.integration.test_no_secrets_leak import bucket_objects

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

ETCD = "config/cluster/etcd/"
STACK = """AWSTemplateFormatVersion: 2010-09-09
Description: etcd of {{ cluster.alias }}
Metadata:
  Tags:
    InfrastructureComponent: "true"
    application: "not-kubernetes"
Resources:
  EtcdClusterSecurityGroup:
    Type: AWS::EC2::SecurityGroup
    Properties:
      GroupDescription: etcd cluster
      Tags:
      - Key: files
        Value: "{{ values.S3GeneratedFilesPath }}"
"""
FILES = """files:
- path: /etc/etcd/ssl/local-id
  data: {{ cluster.local_id | base64 }}
  permissions: 0400
  encrypted: false
- path: /etc/etcd/ssl/client.key
  data: {{ cluster.config_items.etcd_client_server_key }}
  permissions: 0400
  encrypted: true
"""
POLICY = {
    "Statement": [
        {"Effect": "Allow", "Action": ["Update:*"], "Principal": "*", "Resource": ["*"]},
        {
            "Effect": "Deny",
            "Action": ["Update:Replace", "Update:Delete"],
            "Principal": "*",
            "Condition": {
                "StringEquals": {
                    "ResourceType": ["AWS::AutoScaling::AutoScalingGroup", "AWS::S3::Bucket", "AWS::IAM::Role"]
                }
            },
        },
    ]
}


@pytest.fixture(scope="module")
def assembly(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """The CDK app with clm:manageEtcdStack on (the default here) or off (indirect parameter False)."""
    manage = getattr(request, "param", True)
    context = {"clm:manageEtcdStack": True} if manage else {}
    return synthesize(tmp_path_factory.mktemp(f"cdk-out-etcd-{manage}"), "Clm", context)


def provision_with_etcd_config(deployment: Deployment, private_key: str) -> tuple[list[dict], dict[str, str]]:
    """The etcd key under alias/etcd-cluster, the example config with the etcd templates, kube-1 registered: the runs
    and the cluster's config items."""
    cluster = etcd_config(deployment, private_key)
    return provision(deployment, cluster), cluster.config_items


def etcd_config(deployment: Deployment, private_key: str) -> Cluster:
    """The etcd key under alias/etcd-cluster and the example config with the etcd templates: kube-1 with its config
    items, not registered yet."""
    kms = deployment.session.client("kms")
    key = kms.create_key()["KeyMetadata"]
    kms.create_alias(AliasName="alias/etcd-cluster", TargetKeyId=key["KeyId"])
    s3, bucket = deployment.session.client("s3"), deployment.outputs["ConfigBucketName"]
    for name, body in {"stack.yaml": STACK, "files.yaml": FILES}.items():
        s3.put_object(Bucket=bucket, Key=ETCD + name, Body=body.encode())
    deployment.settle()
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    items = {
        **cluster.config_items,
        "kube_auth_secret": "clm/kube-1",
        "etcd_client_server_key": base64.b64encode(private_key.encode()).decode(),
    }
    return dataclasses.replace(cluster, config_items=items)


def provision(deployment: Deployment, cluster: Cluster) -> list[dict]:
    """The cluster registered, its runs succeeded."""
    deployment.registry.put(cluster)
    runs = deployment.settle(known=0)
    assert runs and all(e["status"] == "SUCCEEDED" for e in runs), [(e["status"], e.get("error")) for e in runs]
    return runs


def plan(deployment: Deployment, *args: str) -> dict[str, Any]:
    """`clm plan` of kube-1 against the deployment (its registry table and configuration), as JSON."""
    table, config = deployment.outputs["RegistryTableName"], deployment.outputs["ConfigSourceUri"]
    result = CliRunner().invoke(
        cli, ["--table", table, "-o", "json", "plan", deployment.cluster_id, "--config", config, *args]
    )
    assert result.exit_code == 0, (result.output, result.exception)
    assert "--manage-etcd" not in result.stderr, result.stderr  # the deployment's setting was read
    return json.loads(result.stdout)


def test_the_etcd_stack_comes_first_with_clms_tags_policy_and_encrypted_files_and_a_second_run_changes_nothing(
    deployment: Deployment, nodes: object, tmp_path: Path
) -> None:
    private_key = f"-----BEGIN PRIVATE KEY-----\n{secrets.token_hex(32)}\n-----END PRIVATE KEY-----\n"
    cluster = etcd_config(deployment, private_key)
    registry_file = tmp_path / "clusters.yaml"
    registry_file.write_text(dump_clusters([cluster], with_status=False))
    planned = plan(deployment, "--registry-file", str(registry_file))["stacks"]
    assert [(s["stack_name"], s["file"], s["action"]) for s in planned[:2]] == [
        ("etcd-cluster-etcd", "cluster/etcd/stack.yaml", "create"),
        ("kube-1", "cluster/stack.yaml", "create"),
    ]
    node_files = deployment.session.client("s3"), deployment.outputs["NodeFilesBucketName"]
    assert not bucket_objects(*node_files)  # the plan uploads nothing
    provision(deployment, cluster)
    items = cluster.config_items
    etcd_plan = plan(deployment)["stacks"][0]  # from the registry table now
    assert (etcd_plan["stack_name"], etcd_plan["action"], etcd_plan["template_diff"], etcd_plan["tags"]) == (
        "etcd-cluster-etcd",
        "no change",
        "",
        [],
    )

    cfn = deployment.session.client("cloudformation")
    [etcd] = cfn.describe_stacks(StackName="etcd-cluster-etcd")["Stacks"]
    [cluster_stack] = cfn.describe_stacks(StackName="kube-1")["Stacks"]
    assert etcd["CreationTime"] < cluster_stack["CreationTime"]
    etcd_done = max(
        e["Timestamp"]
        for e in cfn.describe_stack_events(StackName="etcd-cluster-etcd")["StackEvents"]
        if e["LogicalResourceId"] == "etcd-cluster-etcd" and e["ResourceStatus"] == "CREATE_COMPLETE"
    )
    cluster_started = min(e["Timestamp"] for e in cfn.describe_stack_events(StackName="kube-1")["StackEvents"])
    assert etcd_done <= cluster_started  # waited for, before the cluster stack
    assert {t["Key"]: t["Value"] for t in etcd["Tags"]} == {
        "InfrastructureComponent": "true",
        "application": "kubernetes",  # CLM's tags win over the template's
        "component": "etcd-cluster",
        "clm:managed-by": "clm",
        "clm:etcd-cluster": deployment.cluster_id,
    }
    assert etcd["EnableTerminationProtection"]
    assert json.loads(cfn.get_stack_policy(StackName="etcd-cluster-etcd")["StackPolicyBody"]) == POLICY

    s3, bucket = deployment.session.client("s3"), deployment.outputs["NodeFilesBucketName"]
    [(versioned_key, archive)] = [(k, v) for k, v in bucket_objects(s3, bucket).items() if "/etcd/" in k]
    key = versioned_key.split("@")[0]
    assert re.fullmatch(r"kube-1/etcd/[0-9a-f]{128}\.userdata", key), key
    ec2 = deployment.session.client("ec2")
    [group] = ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": ["etcd-cluster-etcd-*"]}])[
        "SecurityGroups"
    ]
    assert {"Key": "files", "Value": f"s3://{bucket}/{key}"} in group["Tags"]
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        contents = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    assert sorted(contents) == ["/etc/etcd/ssl/client.key.enc", "/etc/etcd/ssl/local-id"]
    assert contents["/etc/etcd/ssl/local-id"] == b"kube-1"
    decrypted = deployment.session.client("kms").decrypt(CiphertextBlob=contents["/etc/etcd/ssl/client.key.enc"])
    etcd_key = deployment.session.client("kms").describe_key(KeyId="alias/etcd-cluster")["KeyMetadata"]["Arn"]
    assert decrypted["Plaintext"] == private_key.encode() and decrypted["KeyId"] == etcd_key

    events = len(cfn.describe_stack_events(StackName="etcd-cluster-etcd")["StackEvents"])
    versions = len(s3.list_object_versions(Bucket=bucket).get("Versions", []))
    known = len(deployment.executions(deployment.provision))
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    deployment.registry.put(dataclasses.replace(cluster, config_items={**items, "unrelated": "x"}))
    again = deployment.settle(known=known)
    assert again and all(e["status"] == "SUCCEEDED" for e in again), [(e["status"], e.get("error")) for e in again]
    assert len(s3.list_object_versions(Bucket=bucket).get("Versions", [])) == versions  # nothing uploaded again
    assert len(cfn.describe_stack_events(StackName="etcd-cluster-etcd")["StackEvents"]) == events  # no update


@pytest.mark.parametrize("assembly", [False], indirect=True)
def test_without_the_setting_there_is_no_etcd_stack_and_no_etcd_archive(deployment: Deployment, nodes: object) -> None:
    provision_with_etcd_config(deployment, "key")
    cfn = deployment.session.client("cloudformation")
    names = {s["StackName"] for s in cfn.describe_stacks()["Stacks"]}
    assert "kube-1" in names and "etcd-cluster-etcd" not in names
    assert "etcd-cluster-etcd" not in [s["stack_name"] for s in plan(deployment)["stacks"]]
    s3, bucket = deployment.session.client("s3"), deployment.outputs["NodeFilesBucketName"]
    assert not [k for k in bucket_objects(s3, bucket) if "/etcd/" in k]
