"""A Karpenter pool's bootstrap files on the sandbox with IAM enforced, as CLM's KarpenterNodePoolProvisioner makes
them: its profile's files.yaml (with a KMS-encrypted private key) archived at CLM's key in the node-files bucket,
encrypted with the cluster stack's workers' key, and its EC2NodeClass's userData the plain userdata.yaml naming that
archive. The workflow renders the pools again once the cluster stack (and its key) exists, and applies that."""

from __future__ import annotations

import base64
import dataclasses
import io
import re
import secrets
import tarfile
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.nodesim.karpenter_crds import install_karpenter_crds, remove_karpenter_objects
from tests.integration.deployment import ROOT, Deployment
from tests.integration.test_encrypted_config_items import NAMED_KEY, NAMED_KEY_ID, create_key, encrypted
from tests.integration.test_no_secrets_leak import bucket_objects
from tests.integration.test_node_files import FILES, USER_DATA, assembly, attach_kms_policy, sandbox_aws, upload_profile
from tests.unit.test_render_karpenter import KARPENTER, PROVISIONERS

__all__ = ["assembly", "sandbox_aws"]  # fixtures: the app naming the keys, the cluster stack's KMS policy

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

KARPENTER_PROFILE = "config/cluster/node-pools/worker-karpenter/"


@pytest.fixture
def karpenter_crds(kube_api: k8s.ApiClient) -> Iterator[None]:
    """Karpenter's CRDs; the objects the run applies removed at the end (the control plane is shared)."""
    install_karpenter_crds(kube_api)
    yield
    remove_karpenter_objects(kube_api)


@pytest.mark.usefixtures("karpenter_crds")
def test_karpenter_pool_files_are_archived_encrypted_and_named_in_its_node_class(
    deployment: Deployment, nodes: object, kube_api: k8s.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert create_key(deployment, NAMED_KEY_ID, monkeypatch) == NAMED_KEY
    attach_kms_policy(deployment)
    private_key = f"-----BEGIN PRIVATE KEY-----\n{secrets.token_hex(32)}\n-----END PRIVATE KEY-----\n"
    s3, config = deployment.session.client("s3"), deployment.outputs["ConfigBucketName"]
    for name, body in (("provisioners.yaml", PROVISIONERS), ("userdata.yaml", USER_DATA), ("files.yaml", FILES)):
        s3.put_object(Bucket=config, Key=KARPENTER_PROFILE + name, Body=body.encode())
    upload_profile(deployment)  # the cluster stack outputs WorkerFilesEncryptionKey (and worker-default has files)
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    items = {
        **cluster.config_items,
        "kube_auth_secret": "clm/kube-1",
        "karpenter_pools_enabled": "true",
        "worker_key": encrypted(
            deployment, NAMED_KEY, base64.b64encode(private_key.encode()).decode(), item="worker_key"
        ),
    }
    deployment.registry.put(
        dataclasses.replace(cluster, config_items=items, node_pools=[*cluster.node_pools, KARPENTER])
    )
    runs = deployment.settle(known=0)
    assert runs and all(e["status"] == "SUCCEEDED" for e in runs), [(e["status"], e.get("error")) for e in runs]
    events = deployment.sfn.get_execution_history(executionArn=runs[0]["executionArn"], maxResults=1000)["events"]
    assert "RenderKarpenterPools" in [
        e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e
    ]

    node_class = k8s.CustomObjectsApi(kube_api).get_cluster_custom_object(
        "karpenter.k8s.aws", "v1", "ec2nodeclasses", KARPENTER.name
    )
    bucket = deployment.outputs["NodeFilesBucketName"]
    match = re.fullmatch(
        r"#cloud-config\nwrite_files:\n- path: /etc/environment\n  content: \|\n    S3_CERTS_BUCKET=s3://([^/]+)/(\S+)\n",
        node_class["spec"]["userData"],
    )
    assert match, node_class["spec"]["userData"]  # plain text, not gzipped or base64-encoded
    assert match[1] == bucket and re.fullmatch(r"kube-1/worker/[0-9a-f]{128}\.userdata", match[2])
    archives = {name.split("@")[0]: body for name, body in bucket_objects(s3, bucket).items()}
    assert match[2] in archives  # the same files as worker-default's: the same archive
    with tarfile.open(fileobj=io.BytesIO(archives[match[2]]), mode="r:gz") as tar:
        sealed = tar.extractfile("/etc/kubernetes/ssl/worker-key.pem.enc").read()  # type: ignore[union-attr]
    assert deployment.session.client("kms").decrypt(CiphertextBlob=sealed)["Plaintext"] == private_key.encode()
