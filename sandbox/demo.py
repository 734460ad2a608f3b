"""`make demo`: the main job on the local sandbox, as far as it is built so far.

Starts moto, creates the registry table and the versioned config bucket, uploads the example config
repository, imports examples/clusters.yaml with the real `clm` CLI, and renders every cluster from
S3, printing versions and rendered artefacts. Later milestones add the control plane, the deployed
workflows and the node roll.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import boto3
from rich.console import Console
from rich.rule import Rule
from rich.tree import Tree

from clm.registry.dynamodb import create_table
from clm_sandbox.moto_server import SANDBOX_ENV, moto_server

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
OUT = ROOT / ".demo" / "rendered"
TABLE = "clm-registry"
BUCKET = "clm-config"
PREFIX = "config/"
console = Console()


def clm(*args: str, env: dict[str, str]) -> None:
    """Run the real `clm` CLI as a user would, echoing the command."""
    console.print(f"[bold cyan]$ clm {' '.join(args)}[/]")
    subprocess.run([sys.executable, "-m", "clm.cli", *args], env=env, check=True)


def upload_config(s3: object, source: Path) -> int:
    """Upload the config repository folder under PREFIX; returns the number of files."""
    files = [p for p in sorted(source.rglob("*")) if p.is_file()]
    for path in files:
        s3.put_object(Bucket=BUCKET, Key=PREFIX + path.relative_to(source).as_posix(), Body=path.read_bytes())
    return len(files)


def show_artefacts(folder: Path) -> None:
    """Print the rendered files of each cluster as a tree."""
    for cluster_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        tree = Tree(f"[bold]{cluster_dir.name}[/]  version {(cluster_dir / 'version.txt').read_text().strip()}")
        for path in sorted(cluster_dir.rglob("*")):
            if path.is_file():
                tree.add(f"{path.relative_to(cluster_dir)}  [dim]{path.stat().st_size} B[/]")
        console.print(tree)


def main() -> None:
    """Run the demo end to end and stop the sandbox."""
    started = time.monotonic()
    os.environ.update(SANDBOX_ENV)
    with moto_server() as endpoint:
        env = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "CLM_REGISTRY_TABLE": TABLE}
        console.print(Rule("sandbox"))
        console.print(f"moto (AWS) at {endpoint}")
        session = boto3.Session(region_name=SANDBOX_ENV["AWS_DEFAULT_REGION"])
        create_table(session.client("dynamodb", endpoint_url=endpoint), TABLE)
        s3 = session.client("s3", endpoint_url=endpoint)
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        count = upload_config(s3, EXAMPLES / "config")
        console.print(f"registry table {TABLE}; config s3://{BUCKET}/{PREFIX} ({count} files)")

        console.print(Rule("registry"))
        clm("registry", "import", str(EXAMPLES / "clusters.yaml"), env=env)
        clm("registry", "list", env=env)

        console.print(Rule("render"))
        clm("render", "all", "--config", f"s3://{BUCKET}/{PREFIX}", "--out", str(OUT), env=env)
        show_artefacts(OUT)
    console.print(Rule())
    console.print(f"[bold green]demo finished[/] in {time.monotonic() - started:.1f} s; "
                  f"rendered files in {OUT.relative_to(ROOT)}/")


if __name__ == "__main__":
    main()
