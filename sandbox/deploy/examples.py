"""CLM deployed into a running sandbox with the examples, as `make demo` and `clm sandbox up|deploy` leave it:
the CDK app (by the CDK CLI, clm_sandbox.deploy.cli), examples/config in the config bucket, the sandbox's
kubeconfig in Secrets Manager, and a registry file whose kube-1 reaches the sandbox's API server through that
secret."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from clm.registry.clusters_yaml import dump_clusters, load_clusters
from clm_sandbox.deploy import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CLUSTER = "kube-1"
SECRET = "clm/kube-1"


@dataclass(frozen=True)
class Deployed:
    """What a deployment left: the stack's outputs, the config files uploaded and the registry file written."""

    outputs: dict[str, str]
    config_files: int
    clusters_file: Path
    cluster_id: str

    @property
    def config_uri(self) -> str:
        """Where the config repository was uploaded."""
        return f"s3://{self.outputs['ConfigBucketName']}/config"


def deploy_examples(endpoint: str, kubeconfig: Path, clusters_file: Path) -> Deployed:
    """Deploy (or update) CLM into the sandbox at `endpoint` with the CDK CLI (bootstrapping it first; the cloud
    assembly goes beside `clusters_file`), upload examples/config, store `kubeconfig` as the secret kube-1 reads,
    and write kube-1 of examples/clusters.yaml to `clusters_file`."""
    outputs = cli.bootstrap_and_deploy(endpoint, clusters_file.parent / "cdk.out")
    client = cli.sandbox_client(endpoint)
    files = upload_config(client("s3"), outputs["ConfigBucketName"], EXAMPLES / "config")
    cluster_id = sandbox_clusters(clusters_file)
    store_secret(client("secretsmanager"), SECRET, kubeconfig.read_text(), cluster_id)
    return Deployed(outputs, files, clusters_file, cluster_id)


def upload_config(s3: Any, bucket: str, source: Path, changed: dict[str, str] | None = None) -> int:
    """Upload the config repository under config/ (`changed`: relative path -> new text); returns the file count."""
    changed = changed or {}
    files = [p for p in sorted(source.rglob("*")) if p.is_file()]
    for path in files:
        relative = path.relative_to(source).as_posix()
        if changed and relative not in changed:
            continue
        body = changed[relative].encode() if relative in changed else path.read_bytes()
        s3.put_object(Bucket=bucket, Key=f"config/{relative}", Body=body)
    return len(changed) or len(files)


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


def sandbox_clusters(path: Path) -> str:
    """Write kube-1 of examples/clusters.yaml, reaching the sandbox's API server through the secret, to `path`;
    returns its id."""
    [cluster] = [c for c in load_clusters((EXAMPLES / "clusters.yaml").read_text()) if c.local_id == CLUSTER]
    cluster.config_items["kube_auth_secret"] = SECRET
    path.write_text(dump_clusters([cluster]))
    return cluster.id
