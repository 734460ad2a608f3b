"""Node bootstrap files and user data as CLM makes them, on the sandbox with IAM enforced: a worker profile with
files.yaml (one plain file, one KMS-encrypted private key from an encrypted config item) and userdata.yaml naming
`values.S3GeneratedFilesPath`, a cluster stack whose KMS key is output as WorkerFilesEncryptionKey. The run uploads
the archive at CLM's key in the node-files bucket; it holds the plain file and `<path>.enc`, which KMS decrypts to
the key; the launch template's UserData is the gzipped, base64-encoded userdata with the archive's path. A second
run that changes nothing for the pool uploads nothing and changes neither the node-pool stack nor the launch
template. The private key is nowhere but in the archive's encrypted entry."""

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

from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.deploy_synth import Assembly, synthesize
from clm_sandbox.nodesim import EventKind, NodeSimulator
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


def test_worker_files_are_archived_encrypted_and_named_in_user_data_and_a_second_run_changes_nothing(
    deployment: Deployment,
    nodes: NodeSimulator,
    handler_output: HandlerOutput,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert create_key(deployment, NAMED_KEY_ID, monkeypatch) == NAMED_KEY
    attach_kms_policy(deployment)
    private_key = f"-----BEGIN PRIVATE KEY-----\n{secrets.token_hex(32)}\n-----END PRIVATE KEY-----\n"
    worker_key = base64.b64encode(private_key.encode()).decode()
    upload_profile(deployment)
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    items = {
        **cluster.config_items,
        "kube_auth_secret": "clm/kube-1",
        "worker_key": encrypted(deployment, NAMED_KEY, worker_key),
    }
    deployment.registry.put(dataclasses.replace(cluster, config_items=items))
    runs = deployment.settle(known=0)
    assert runs and all(e["status"] == "SUCCEEDED" for e in runs), [(e["status"], e.get("error")) for e in runs]

    s3, bucket = deployment.session.client("s3"), deployment.outputs["NodeFilesBucketName"]
    assert bucket == f"cluster-lifecycle-manager-{ACCOUNT}-eu-central-1"
    archives = bucket_objects(s3, bucket)
    [(versioned_key, archive)] = archives.items()
    key = versioned_key.split("@")[0]
    assert re.fullmatch(r"kube-1/worker/[0-9a-f]{128}\.userdata", key), key
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        members = {member.name: member for member in tar.getmembers()}
        contents = {name: tar.extractfile(member).read() for name, member in members.items()}  # type: ignore[union-attr]
    assert sorted(members) == ["/etc/kubernetes/.local-id", "/etc/kubernetes/ssl/worker-key.pem.enc"]
    assert {member.mode for member in members.values()} == {0o400}
    assert contents["/etc/kubernetes/.local-id"] == b"kube-1"
    sealed = contents["/etc/kubernetes/ssl/worker-key.pem.enc"]
    assert private_key.encode() not in sealed
    kms = deployment.session.client("kms")
    decrypted = kms.decrypt(CiphertextBlob=sealed)
    assert decrypted["Plaintext"] == private_key.encode()
    outputs = deployment.session.client("cloudformation").describe_stacks(StackName="kube-1")["Stacks"][0]["Outputs"]
    [key_id] = [o["OutputValue"] for o in outputs if o["OutputKey"] == "WorkerFilesEncryptionKey"]
    assert decrypted["KeyId"].endswith(key_id)  # the cluster stack's key, not the config items' key

    # The nodes bootstrap as their role: they fetch the archive and decrypt its key (clm_sandbox.nodesim_bootstrap).
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


def _states(deployment: Deployment, execution: str) -> list[str]:
    events = deployment.sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]
    return [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]
