"""CLM deployed into a running sandbox with the examples, as `make demo` and `clm sandbox up|deploy` leave it:
the CDK app (by the CDK CLI, clm_sandbox.deploy.cli), examples/config in the config bucket, the sandbox's
kubeconfig in Secrets Manager, and a registry file whose kube-1 reaches the sandbox's API server through that
secret. A sandbox with target accounts (clm_sandbox.targets) gets the hub with clm:targetAccounts naming them,
ClmTarget in each (deployed as its admin), and in the registry file and the registry a cluster per target, based on
kube-1, reaching its own control plane through a secret of its own."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from clm.config.push import local_tree, plan_push, push
from clm.config.s3 import S3Source
from clm.model import Cluster
from clm.registry.clusters_yaml import dump_clusters, load_clusters
from clm.registry.dynamodb import DynamoRegistry
from clm_sandbox.deploy import cli
from clm_sandbox.targets import TargetPlane, cluster_name

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CLUSTER = "kube-1"
SECRET = "clm/kube-1"


@dataclass(frozen=True)
class Deployed:
    """What a deployment left: the stack's outputs, the config files uploaded and the registry file written (kube-1
    and the targets' clusters), and the clusters it wrote into the registry (those of a fleet not there yet)."""

    outputs: dict[str, str]
    config_files: int
    clusters_file: Path
    cluster_id: str
    targets: tuple[str, ...] = ()
    registered: tuple[str, ...] = ()

    @property
    def config_uri(self) -> str:
        """Where the config repository was uploaded."""
        return f"s3://{self.outputs['ConfigBucketName']}/config"


def deploy_examples(
    endpoint: str, kubeconfig: Path, clusters_file: Path, planes: Sequence[TargetPlane] = ()
) -> Deployed:
    """Deploy (or update) CLM into the sandbox at `endpoint` with the CDK CLI (bootstrapping it first; the cloud
    assembly goes beside `clusters_file`), upload examples/config, store `kubeconfig` as the secret kube-1 reads,
    and write kube-1 of examples/clusters.yaml to `clusters_file`. With target `planes`: the hub may reach their
    accounts, ClmTarget is deployed in each, and their clusters join the file and (when new) the registry."""
    outdir = clusters_file.parent / "cdk.out"
    # With targets, the hub's synthesis holds ClmTarget too (clm:hub), deployed from there into each target: the
    # app is synthesized once (~10 CPU-seconds), not once per target.
    context = {"clm:targetAccounts": [p.account for p in planes], "clm:hub": cli.HUB} if planes else None
    outputs = cli.bootstrap_and_deploy(endpoint, outdir, context)
    for plane in planes:
        cli.bootstrap(endpoint, plane.account, plane.region)
        target_outdir = outdir.with_name(f"cdk.out-{plane.account}-{plane.region}")
        cli.deploy_target(endpoint, target_outdir, plane.account, plane.region, assembly=outdir)
    client = cli.sandbox_client(endpoint)
    files = upload_config(client("s3"), outputs["ConfigBucketName"], EXAMPLES / "config")
    clusters = sandbox_clusters(clusters_file, planes)
    for cluster, config in zip(clusters, [kubeconfig, *(Path(plane.kubeconfig) for plane in planes)], strict=True):
        store_secret(client("secretsmanager"), cluster.config_items["kube_auth_secret"], config.read_text(), cluster.id)
    registered: tuple[str, ...] = ()
    if planes:  # a fleet's clusters, registered
        registered = register_new(DynamoRegistry(client("dynamodb"), outputs["RegistryTableName"]), clusters)
    return Deployed(outputs, files, clusters_file, clusters[0].id, tuple(c.id for c in clusters[1:]), registered)


def upload_config(s3: Any, bucket: str, source: Path, changed: dict[str, str] | None = None) -> int:
    """Push the config repository `source` to config/, or only `changed` (relative path -> new text, a new file
    too), as `clm config push --no-delete` does: reconcile reads it at once; the count of files uploaded."""
    files = {path: text.encode() for path, text in changed.items()} if changed else local_tree(source)
    target = S3Source(s3, bucket, "config/")
    plan = plan_push(target, files, delete=False)
    push(target, files, plan)
    return len(plan.upload)


def store_secret(secrets: Any, name: str, value: str, cluster_id: str) -> None:
    """Create the secret bound to `cluster_id` (CLM's tag clm:cluster-id), or give the existing one this value and
    tag."""
    tags = [{"Key": "clm:cluster-id", "Value": cluster_id}]  # clm.kube.auth.CLUSTER_ID_TAG
    try:
        secrets.create_secret(Name=name, SecretString=value, Tags=tags)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceExistsException":
            raise
        secrets.put_secret_value(SecretId=name, SecretString=value)
        secrets.tag_resource(SecretId=name, Tags=tags)


def sandbox_clusters(path: Path, planes: Sequence[TargetPlane] = ()) -> list[Cluster]:
    """Write kube-1 of examples/clusters.yaml, reaching the sandbox's API server through the secret, and a copy of
    it in each target (:func:`in_target`) to `path`; returns them, kube-1 first."""
    [cluster] = [c for c in load_clusters((EXAMPLES / "clusters.yaml").read_text()) if c.local_id == CLUSTER]
    cluster.config_items["kube_auth_secret"] = SECRET
    clusters = [cluster, *(in_target(cluster, plane) for plane in planes)]
    path.write_text(dump_clusters(clusters))
    return clusters


def in_target(base: Cluster, plane: TargetPlane) -> Cluster:
    """`base` as the target's example cluster: its id, names, account and region, and its own kubeconfig secret
    (`clm/<name>`)."""
    name = cluster_name(plane.target)
    return dataclasses.replace(
        base,
        id=plane.cluster_id,
        local_id=name,
        alias=f"sandbox-{name}",
        api_server_url=f"https://{name}.sandbox.example.org",
        infrastructure_account=f"aws:{plane.account}",
        region=plane.region,
        config_items={**base.config_items, "kube_auth_secret": f"clm/{name}"},
    )


def register_new(registry: DynamoRegistry, clusters: Sequence[Cluster]) -> tuple[str, ...]:
    """Write the clusters the registry does not hold (their first runs start); returns their ids. The sandbox's
    stand-in for `clm registry import`, which refuses clusters outside the caller's account and region."""
    known = {cluster.id for cluster in registry.list_clusters()}
    new = [cluster for cluster in clusters if cluster.id not in known]
    for cluster in new:
        registry.put(cluster)
    return tuple(cluster.id for cluster in new)
