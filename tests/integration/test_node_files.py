"""Node bootstrap files and user data as CLM makes them, on the sandbox with IAM enforced: a worker profile with
files.yaml (one plain file, one KMS-encrypted private key from an encrypted config item) and userdata.yaml naming
`values.S3GeneratedFilesPath`, a cluster stack whose KMS key is output as WorkerFilesEncryptionKey. The run uploads
the archive at CLM's key in the node-files bucket; it holds the plain file and `<path>.enc`, which KMS decrypts to
the key; the launch template's UserData is the gzipped, base64-encoded userdata with the archive's path. A second
run that changes nothing for the pool uploads nothing and changes neither the node-pool stack nor the launch
template. The private key is nowhere but in the archive's encrypted entry. A cluster stack that replaces its files
key (the old one deleted with it) makes the next run rewrite the archive at the same path under the new key, which
a node launched then decrypts as its role (clm_sandbox.nodesim.bootstrap); the format stays CLM's
(provisioner/remote_files.go makeArchive: each file KMS-encrypted, which nodes decrypt with KMS)."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import io
import json
import re
import secrets
import tarfile
from collections.abc import Iterator

import boto3
import pytest

from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.deploy.synth import Assembly, synthesize
from clm_sandbox.nodesim import EventKind, NodeSimulator
from clm_sandbox.nodesim.bootstrap import NodeBootstrap
from tests.integration.deployment import ROOT, Deployment, instances
from tests.integration.test_encrypted_config_items import NAMED_KEY, NAMED_KEY_ID, create_key, encrypted, forms
from tests.integration.test_no_secrets_leak import (
    HandlerOutput,
    assert_no_secret,
    bucket_objects,
    handler_output,  # noqa: F401 - the fixture
    histories,
    log_events,
    payloads,
)

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

ACCOUNT = "123456789012"
KMS_POLICY = f"arn:aws:iam::{ACCOUNT}:policy/clm-cluster-kms"
PROFILE = "config/cluster/node-pools/worker-default/"
FILES = """files:
- path: /etc/kubernetes/.local-id
  data: {{ cluster.local_id | base64 }}
  permissions: 0400
- path: /etc/kubernetes/ssl/worker-key.pem
  data: {{ cluster.config_items.worker_key }}
  permissions: 0400
  encrypted: true
"""
USER_DATA = """#cloud-config
write_files:
- path: /etc/environment
  content: |
    S3_CERTS_BUCKET={{ values.S3GeneratedFilesPath }}
"""
KEY_RESOURCE = """Resources:
  WorkerFilesEncryptionKey:
    Type: AWS::KMS::Key
    Properties:
      KeyPolicy:
        Version: "2012-10-17"
        Statement:
        - Effect: Allow
          Principal: {AWS: !Sub "arn:aws:iam::${AWS::AccountId}:root"}
          Action: "kms:*"
          Resource: "*"
"""
# What Zalando's worker role grants for its bootstrap (cluster.yaml): reading the archive, decrypting its files; CLM's
# permissions boundary caps both to the node-files bucket and CLM's keys.
NODE_POLICIES = """          Action: sts:AssumeRole
      Policies:
      - PolicyName: bootstrap
        PolicyDocument:
          Version: "2012-10-17"
          Statement:
          - {Action: "kms:Decrypt", Effect: Allow, Resource: "*"}
          - {Action: "s3:GetObject", Effect: Allow, Resource: "arn:aws:s3:::*"}
  NodeInstanceProfile:"""
KEY_OUTPUT = """Outputs:
  WorkerFilesEncryptionKey:
    Value: !Ref WorkerFilesEncryptionKey
"""


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """The CDK app naming the config items' key and a policy that lets the cluster stack make KMS keys."""
    context = {"clm:decryptKeyArns": [NAMED_KEY], "clm:clusterStackPolicyArns": [KMS_POLICY]}
    return synthesize(tmp_path_factory.mktemp("cdk-out-node-files"), "Clm", context)


@pytest.fixture
def sandbox_aws(sandbox_aws: boto3.Session) -> Iterator[boto3.Session]:
    """The sandbox with the cluster stack role's extra policy in place before the app is deployed."""
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "kms:*", "Resource": "*"}]}
    sandbox_aws.client("iam").create_policy(PolicyName="clm-cluster-kms", PolicyDocument=json.dumps(document))
    yield sandbox_aws


def attach_kms_policy(deployment: Deployment) -> None:
    """The extra policy on the ClusterStackRole, as the deployed ManagedPolicyArns attach it on AWS (moto's
    CloudFormation ignores a role's ManagedPolicyArns)."""
    iam = deployment.session.client("iam")
    [role] = [r["RoleName"] for r in iam.list_roles()["Roles"] if "ClusterStackRole" in r["RoleName"]]
    iam.attach_role_policy(RoleName=role, PolicyArn=KMS_POLICY)


def upload_profile(deployment: Deployment) -> None:
    """The example config with files.yaml and userdata.yaml in worker-default, its stack reading values.UserData,
    and the cluster stack making the workers' files key and letting the worker role bootstrap (as Zalando's)."""
    s3, bucket = deployment.session.client("s3"), deployment.outputs["ConfigBucketName"]
    config = ROOT / "examples" / "config"
    cluster_stack = (config / "cluster/stack.yaml").read_text()
    cluster_stack = cluster_stack.replace("Resources:\n", KEY_RESOURCE, 1).replace("Outputs:\n", KEY_OUTPUT, 1)
    role_end = "          Action: sts:AssumeRole\n  NodeInstanceProfile:"
    assert role_end in cluster_stack
    cluster_stack = cluster_stack.replace(role_end, NODE_POLICIES, 1)
    pool_stack = (config / "cluster/node-pools/worker-default/stack.yaml").read_text()
    assert "UserData: {{ base64(user_data) | yaml }}" in pool_stack
    pool_stack = pool_stack.replace("UserData: {{ base64(user_data) | yaml }}", "UserData: {{ values.UserData }}")
    for key, body in {
        "config/cluster/stack.yaml": cluster_stack,
        PROFILE + "stack.yaml": pool_stack,
        PROFILE + "files.yaml": FILES,
        PROFILE + "userdata.yaml": USER_DATA,
    }.items():
        s3.put_object(Bucket=bucket, Key=key, Body=body.encode())
    deployment.settle()


def launch_template_user_data(deployment: Deployment) -> tuple[str, int]:
    """The worker pool's launch template: its latest UserData, decoded and gunzipped, and its number of versions."""
    ec2 = deployment.session.client("ec2")
    versions = ec2.describe_launch_template_versions(LaunchTemplateName="kube-1-default-worker")
    latest = max(versions["LaunchTemplateVersions"], key=lambda v: v["VersionNumber"])
    text = gzip.decompress(base64.b64decode(latest["LaunchTemplateData"]["UserData"])).decode()
    return text, len(versions["LaunchTemplateVersions"])


@dataclasses.dataclass
class Provisioned:
    """kube-1 provisioned with the worker profile's files: its registry entry, the private key in the archive."""

    cluster: Cluster
    private_key: str
    worker_key: str  # the private key base64-encoded, as the config item holds it before encryption


def provision_with_files(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> Provisioned:
    """The config items' key, the ClusterStackRole's KMS policy, the profile uploaded, kube-1 registered with an
    encrypted private key; its first run succeeded."""
    assert create_key(deployment, NAMED_KEY_ID, monkeypatch) == NAMED_KEY
    attach_kms_policy(deployment)
    private_key = f"-----BEGIN PRIVATE KEY-----\n{secrets.token_hex(32)}\n-----END PRIVATE KEY-----\n"
    worker_key = base64.b64encode(private_key.encode()).decode()
    upload_profile(deployment)
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    items = {
        **cluster.config_items,
        "kube_auth_secret": "clm/kube-1",
        "worker_key": encrypted(deployment, NAMED_KEY, worker_key, item="worker_key"),
    }
    cluster = dataclasses.replace(cluster, config_items=items)
    deployment.registry.put(cluster)
    runs = deployment.settle(known=0)
    assert runs and all(e["status"] == "SUCCEEDED" for e in runs), [(e["status"], e.get("error")) for e in runs]
    return Provisioned(cluster, private_key, worker_key)


def archive_members(archive: bytes) -> tuple[dict[str, tarfile.TarInfo], dict[str, bytes]]:
    """The archive's members by name, and their contents."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        members = {member.name: member for member in tar.getmembers()}
        contents = {name: tar.extractfile(member).read() for name, member in members.items()}  # type: ignore[union-attr]
    return members, contents


def files_key_id(deployment: Deployment) -> str:
    """The cluster stack's output WorkerFilesEncryptionKey: its files key's id."""
    outputs = deployment.session.client("cloudformation").describe_stacks(StackName="kube-1")["Stacks"][0]["Outputs"]
    [key_id] = [o["OutputValue"] for o in outputs if o["OutputKey"] == "WorkerFilesEncryptionKey"]
    return key_id


def test_worker_files_are_archived_encrypted_and_named_in_user_data_and_a_second_run_changes_nothing(
    deployment: Deployment,
    nodes: NodeSimulator,
    handler_output: HandlerOutput,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provisioned = provision_with_files(deployment, monkeypatch)
    cluster, private_key, worker_key = provisioned.cluster, provisioned.private_key, provisioned.worker_key
    items = cluster.config_items

    s3, bucket = deployment.session.client("s3"), deployment.outputs["NodeFilesBucketName"]
    assert bucket == f"cluster-lifecycle-manager-{ACCOUNT}-eu-central-1"
    archives = bucket_objects(s3, bucket)
    [(versioned_key, archive)] = archives.items()
    key = versioned_key.split("@")[0]
    assert re.fullmatch(r"kube-1/worker/[0-9a-f]{128}\.userdata", key), key
    members, contents = archive_members(archive)
    assert sorted(members) == ["/etc/kubernetes/.local-id", "/etc/kubernetes/ssl/worker-key.pem.enc"]
    assert {member.mode for member in members.values()} == {0o400}
    assert contents["/etc/kubernetes/.local-id"] == b"kube-1"
    sealed = contents["/etc/kubernetes/ssl/worker-key.pem.enc"]
    assert private_key.encode() not in sealed
    kms = deployment.session.client("kms")
    decrypted = kms.decrypt(CiphertextBlob=sealed)
    assert decrypted["Plaintext"] == private_key.encode()
    assert decrypted["KeyId"].endswith(files_key_id(deployment))  # the cluster stack's key, not the config items'

    # The nodes bootstrap as their role: they fetch the archive and decrypt its key (clm_sandbox.nodesim.bootstrap).
    running = len(instances(deployment.session))
    assert running and len(nodes.wait_for_ready_nodes(running)) == running
    assert nodes.events_of(EventKind.BOOTSTRAP_FAILED) == []

    user_data, versions = launch_template_user_data(deployment)
    assert f"S3_CERTS_BUCKET=s3://{bucket}/{key}\n" in user_data and user_data.startswith("#cloud-config")
    cfn = deployment.session.client("cloudformation")
    pool_stack = "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1"
    events = len(cfn.describe_stack_events(StackName=pool_stack)["StackEvents"])

    known = len(deployment.executions(deployment.provision))
    deployment.registry.put(dataclasses.replace(cluster, config_items={**items, "unrelated": "x"}))
    again = deployment.settle(known=known)
    assert again and all(e["status"] == "SUCCEEDED" for e in again), [(e["status"], e.get("error")) for e in again]
    assert any("RenderNodePools" in _states(deployment, e["executionArn"]) for e in again)
    assert len(s3.list_object_versions(Bucket=bucket).get("Versions", [])) == 1  # nothing uploaded again
    assert len(cfn.describe_stack_events(StackName=pool_stack)["StackEvents"]) == events  # the stack untouched
    assert launch_template_user_data(deployment) == (user_data, versions)  # no new launch template: no roll

    leaks = forms(private_key, worker_key)
    for machine, described, history in histories(deployment):
        for where, text in payloads(described, history):
            assert_no_secret(f"{machine} {described['name']}: {where}", text, leaks)
    assert_no_secret("the handlers' log lines", handler_output.log.getvalue(), leaks)
    printed = handler_output.printed.readouterr()
    assert_no_secret("the handlers' output", printed.out + printed.err, leaks)
    assert_no_secret("CloudWatch Logs", "\n".join(log_events(deployment.session)), leaks)
    for name, body in bucket_objects(s3, deployment.outputs["ArtefactBucketName"]).items():
        assert_no_secret(f"artefacts {name}", body.decode(errors="replace"), leaks)


def test_a_replaced_files_key_rewrites_the_archive_which_a_new_node_decrypts(
    deployment: Deployment, nodes: NodeSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    provisioned = provision_with_files(deployment, monkeypatch)
    s3, bucket = deployment.session.client("s3"), deployment.outputs["NodeFilesBucketName"]
    [key] = {versioned.split("@")[0] for versioned in bucket_objects(s3, bucket)}
    old_key, user_data = files_key_id(deployment), launch_template_user_data(deployment)

    known = len(deployment.executions(deployment.provision))
    config = deployment.outputs["ConfigBucketName"]
    stack = s3.get_object(Bucket=config, Key="config/cluster/stack.yaml")["Body"].read().decode()
    replaced = stack.replace("  WorkerFilesEncryptionKey:\n", "  WorkerFilesKeyReplaced:\n", 1)
    replaced = replaced.replace("!Ref WorkerFilesEncryptionKey\n", "!Ref WorkerFilesKeyReplaced\n", 1)
    assert replaced.count("WorkerFilesKeyReplaced") == 2
    s3.put_object(Bucket=config, Key="config/cluster/stack.yaml", Body=replaced.encode())  # reconcile: a run
    again = deployment.settle(known=known)
    assert again and all(e["status"] == "SUCCEEDED" for e in again), [(e["status"], e.get("error")) for e in again]

    new_key, kms = files_key_id(deployment), deployment.session.client("kms")
    assert new_key != old_key
    with pytest.raises(kms.exceptions.NotFoundException):
        kms.describe_key(KeyId=old_key)  # deleted with the stack's old resource
    versions = s3.list_object_versions(Bucket=bucket)["Versions"]
    assert [version["Key"] for version in versions] == [key, key]  # rewritten at its path
    _, contents = archive_members(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    decrypted = kms.decrypt(CiphertextBlob=contents["/etc/kubernetes/ssl/worker-key.pem.enc"])
    assert decrypted["KeyId"].endswith(new_key) and decrypted["Plaintext"] == provisioned.private_key.encode()
    assert launch_template_user_data(deployment) == user_data  # the same path: no roll
    running = instances(deployment.session)  # a node launched now bootstraps as they do, as its role
    assert running and {NodeBootstrap(deployment.session).failure(instance) for instance in running} == {None}


def _states(deployment: Deployment, execution: str) -> list[str]:
    events = deployment.sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]
    return [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]
