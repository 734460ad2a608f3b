"""Combined config sources and channels on the sandbox: CLM deployed with a second source in the config bucket
(`clm:extraConfigPrefixes`), two clusters on two channels, provision runs of the deployed workflow, and a config
change on one channel that reconciles only that channel's cluster (CLM: channel/combined.go, api/cluster.go)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from kubernetes import client as k8s

from clm.registry.clusters_yaml import load_clusters
from clm_sandbox.deploy.synth import Assembly, synthesize
from clm_sandbox.nodesim import NodeSimulator
from tests.endpoints import store_kube_secret
from tests.integration.deployment import ROOT, Deployment

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

EXAMPLE = ROOT / "examples" / "config"
TEAM = {  # the second source ("team"): defaults merged over main's, a component of its own, deletions added
    "cluster/config-defaults.yaml": "team_greeting: hello from team\ndrain_poll_interval: 10s\n",
    "cluster/manifests/team-app/settings.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: team-settings-{{ cluster.local_id }}, namespace: example}\n"
        "data:\n  greeting: {{ cluster.config_items.team_greeting | yaml }}\n"
        "  poll: {{ cluster.config_items.drain_poll_interval | yaml }}\n"
        "  replicas: {{ cluster.config_items.app_replicas | yaml }}\n"
    ),
    "cluster/manifests/deletions.yaml": "post_apply:\n- {kind: ConfigMap, namespace: example, name: team-obsolete}\n",
    "cluster/stack.yaml": "this is never read: stacks come from the first source\n",
}


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """The CDK app with a second config source, prefix team-config/ of the config bucket, named team. (Channels on a
    CodeCommit repository: tests/integration/test_config_channels_codecommit.py.)"""
    return synthesize(tmp_path_factory.mktemp("cdk-out"), "Clm", {"clm:extraConfigPrefixes": "team=team-config/"})


def put_tree(s3, bucket: str, prefix: str, files: dict[str, bytes]) -> None:
    for path, content in files.items():
        s3.put_object(Bucket=bucket, Key=prefix + path, Body=content)


def beta_files() -> dict[str, bytes]:
    """The example config with the network moved to 10.1.0.0/16 (the node simulator names Nodes by their IP)."""
    files = {p.relative_to(EXAMPLE).as_posix(): p.read_bytes() for p in sorted(EXAMPLE.rglob("*")) if p.is_file()}
    for path in ("cluster/stack.yaml", "cluster/config-defaults.yaml"):
        files[path] = files[path].replace(b"10.0.", b"10.1.")
    return files


@contextmanager
def two_clusters(deployment: Deployment, kube_api: k8s.ApiClient) -> Iterator[dict[str, str]]:
    """kube-1 (no channel) and kube-9 (channel beta) registered as ready, each with simulated kubelets; their first
    runs start. Yields {local id: cluster id}."""
    core = k8s.CoreV1Api(kube_api)
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="example")))
    core.create_namespaced_config_map("example", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="team-obsolete")))
    kube1 = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    kube1 = dataclasses.replace(kube1, lifecycle_status="ready")
    kube1.config_items["kube_auth_secret"] = "clm/kube-1"
    kube9 = dataclasses.replace(kube1, id=kube1.id.replace("kube-1", "kube-9"), local_id="kube-9", channel="beta")
    # kube-9's own credential (a secret is bound to one cluster), reaching the same control plane as kube-1's
    kubeconfig = deployment.session.client("secretsmanager").get_secret_value(SecretId="clm/kube-1")["SecretString"]
    store_kube_secret(deployment.session, "clm/kube-9", kubeconfig, kube9.id)
    kube9 = dataclasses.replace(kube9, config_items={**kube1.config_items, "kube_auth_secret": "clm/kube-9"})
    simulate = {"boot_delay": 1.0, "pod_ready_delay": 0.2, "time_scale": 0.1}
    with (
        NodeSimulator(kube_api, deployment.session, kube1.id, **simulate),
        NodeSimulator(kube_api, deployment.session, kube9.id, **simulate),
    ):
        for cluster in (kube1, kube9):
            deployment.registry.put(cluster)  # the registry change starts each cluster's first run
        yield {"kube-1": kube1.id, "kube-9": kube9.id}


@pytest.fixture
def fleet(deployment: Deployment, kube_api: k8s.ApiClient) -> Iterator[dict[str, str]]:
    """Channel beta of main (config/beta/) and the team source on both channels uploaded, then two_clusters."""
    s3, bucket = deployment.session.client("s3"), deployment.outputs["ConfigBucketName"]
    assert deployment.outputs["ConfigSourceUri"] == f"main=s3://{bucket}/config/,team=s3://{bucket}/team-config/"
    put_tree(s3, bucket, "config/beta/", beta_files())
    team = {path: text.encode() for path, text in TEAM.items()}
    put_tree(s3, bucket, "team-config/", team)
    put_tree(s3, bucket, "team-config/beta/", team)
    deployment.settle()  # the uploads' reconciles (no cluster yet)
    with two_clusters(deployment, kube_api) as ids:
        yield ids


def config_part(deployment: Deployment, cluster_id: str) -> str:
    return deployment.registry.get(cluster_id).status.current_version.rpartition("#")[0]


def test_combined_sources_and_channels_end_to_end(
    deployment: Deployment, fleet: dict[str, str], kube_api: k8s.ApiClient
) -> None:
    runs = deployment.settle(known=0)
    assert sorted(json.loads(r["input"])["cluster_id"] for r in runs) == sorted(fleet.values())
    assert all(r["status"] == "SUCCEEDED" for r in runs), [(r["status"], r.get("cause")) for r in runs]
    versions = {name: config_part(deployment, cluster_id) for name, cluster_id in fleet.items()}
    # the config version names every source's version, and each channel has its own
    assert all(v.startswith("main=") and ";team=" in v for v in versions.values()), versions
    assert versions["kube-1"] != versions["kube-9"]

    # the team source's component is applied with config-defaults merged key by key (team's wins over main's,
    # main's own items kept, the registry's over both); its deletions ran after main's
    core = k8s.CoreV1Api(kube_api)
    settings = core.read_namespaced_config_map("team-settings-kube-1", "example").data
    assert settings == {"greeting": "hello from team", "poll": "10s", "replicas": "3"}
    assert core.read_namespaced_config_map("team-settings-kube-9", "example").data == settings
    names = {cm.metadata.name for cm in core.list_namespaced_config_map("example").items}
    assert "team-obsolete" not in names

    # a change on channel beta: only kube-9's version changes, only kube-9 gets a run
    known = len(deployment.executions(deployment.provision))
    machines = deployment.sfn.list_state_machines()["stateMachines"]
    [reconcile] = [m["stateMachineArn"] for m in machines if m["name"] == "clm-reconcile"]
    reconciles_before = len(deployment.executions(reconcile))
    marker = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: beta-marker-{{ cluster.local_id }}, namespace: example}\n"
    )
    s3, bucket = deployment.session.client("s3"), deployment.outputs["ConfigBucketName"]
    s3.put_object(Bucket=bucket, Key="config/beta/cluster/manifests/beta-only/marker.yaml", Body=marker.encode())
    runs = deployment.settle(known=known)
    assert [json.loads(r["input"])["cluster_id"] for r in runs] == [fleet["kube-9"]]
    assert runs[0]["status"] == "SUCCEEDED"
    assert config_part(deployment, fleet["kube-1"]) == versions["kube-1"]
    assert config_part(deployment, fleet["kube-9"]) not in (versions["kube-9"], versions["kube-1"])
    assert core.read_namespaced_config_map("beta-marker-kube-9", "example").metadata.name == "beta-marker-kube-9"
    outputs = [
        json.loads(deployment.sfn.describe_execution(executionArn=e["executionArn"])["output"])
        for e in deployment.executions(reconcile)[reconciles_before:]
    ]
    assert [(o["change"], o["clusters"], o["concerned"]) for o in outputs] == [
        ({"source": "main", "channel": "beta"}, 2, 1)
    ]
