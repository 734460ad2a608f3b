"""Channels on a CodeCommit configuration repository, through the deployed workflow on the sandbox: CLM deployed
with `clm:codeCommitRepository` (the repository created by its stack), the example config on branch main, channel
beta on branch beta; two clusters, one per channel, each provisioned from its branch; a push to beta reconciles only
the beta cluster (CLM: channel/git.go, a channel is a branch)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from clm_sandbox.deploy.synth import Assembly, synthesize
from tests.integration.deployment import Deployment
from tests.integration.test_config_channels import EXAMPLE, beta_files, config_part, two_clusters

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

REPOSITORY = "clm-config"
MARKER = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: beta-marker-{{ cluster.local_id }}, namespace: example}\n"


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """The CDK app reading its configuration from a CodeCommit repository it creates (branch main)."""
    return synthesize(tmp_path_factory.mktemp("cdk-out"), "Clm", {"clm:codeCommitRepository": REPOSITORY})


def _commit(codecommit, branch: str, files: dict[str, bytes], parent: str | None) -> str:
    puts = [{"filePath": path, "fileContent": content} for path, content in files.items()]
    options = {"parentCommitId": parent} if parent else {}
    return codecommit.create_commit(
        repositoryName=REPOSITORY, branchName=branch, putFiles=puts, commitMessage=f"to {branch}", **options
    )["commitId"]


@pytest.fixture
def fleet(deployment: Deployment, kube_api: k8s.ApiClient) -> Iterator[dict[str, str]]:
    """The example config pushed to main, channel beta's to beta, then kube-1 (main) and kube-9 (beta)."""
    assert deployment.outputs["ConfigSourceUri"] == f"codecommit://{REPOSITORY}@main"
    codecommit = deployment.session.client("codecommit")
    files = {p.relative_to(EXAMPLE).as_posix(): p.read_bytes() for p in sorted(EXAMPLE.rglob("*")) if p.is_file()}
    main = _commit(codecommit, "main", files, None)
    codecommit.create_branch(repositoryName=REPOSITORY, branchName="beta", commitId=main)
    beta = {path: content for path, content in beta_files().items() if files.get(path) != content}
    _commit(codecommit, "beta", beta, main)
    deployment.settle()  # the pushes' reconciles (no cluster yet)
    with two_clusters(deployment, kube_api) as ids:
        yield ids


def test_each_channel_is_a_branch_and_a_push_reconciles_only_its_clusters(
    deployment: Deployment, fleet: dict[str, str], kube_api: k8s.ApiClient
) -> None:
    runs = deployment.settle(known=0)
    assert sorted(json.loads(r["input"])["cluster_id"] for r in runs) == sorted(fleet.values())
    assert all(r["status"] == "SUCCEEDED" for r in runs), [(r["status"], r.get("cause")) for r in runs]
    codecommit = deployment.session.client("codecommit")
    heads = {
        b: codecommit.get_branch(repositoryName=REPOSITORY, branchName=b)["branch"]["commitId"]
        for b in ("main", "beta")
    }
    versions = {name: config_part(deployment, cluster_id) for name, cluster_id in fleet.items()}
    assert versions == {"kube-1": heads["main"], "kube-9": heads["beta"]}  # each cluster at its branch's commit

    known = len(deployment.executions(deployment.provision))
    pushed = _commit(codecommit, "beta", {"cluster/manifests/beta-only/marker.yaml": MARKER.encode()}, heads["beta"])
    runs = deployment.settle(known=known)
    assert [json.loads(r["input"])["cluster_id"] for r in runs] == [fleet["kube-9"]]
    assert runs[0]["status"] == "SUCCEEDED"
    assert config_part(deployment, fleet["kube-1"]) == heads["main"]
    assert config_part(deployment, fleet["kube-9"]) == pushed
    core = k8s.CoreV1Api(kube_api)
    assert core.read_namespaced_config_map("beta-marker-kube-9", "example").metadata.name == "beta-marker-kube-9"
    names = {cm.metadata.name for cm in core.list_namespaced_config_map("example").items}
    assert "beta-marker-kube-1" not in names
