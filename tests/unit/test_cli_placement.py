"""`clm registry import|set` and `clm plan` refuse a cluster whose infrastructure_account or region is not the
caller's (STS, --region), naming file, line, cluster and fields, before any write; `--skip-foreign` imports a
multi-account file's local part (in-process moto: the caller in 123456789012, eu-central-1)."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from click.testing import CliRunner, Result

from clm.cli.main import cli
from clm.model import Cluster
from clm.registry.clusters_yaml import dump_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table
from tests.corpus_samples import sample_clusters
from tests.unit.test_cli_helpers import KUBE_1, KUBE_2, TABLE, clm  # noqa: F401  (the `clm` fixture)
from tests.unit.test_cli_plan import CONFIG, aws_state
from tests.unit.test_stacks_support import stacks_aws
from tests.unit.test_workflow_placement import DEPLOYMENT, elsewhere

__all__ = ["stacks_aws"]  # fixture

ONLY_HERE = "CLM acts only in its own account and region"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["--table", TABLE, *args], catch_exceptions=True)


@pytest.fixture
def registry(aws: boto3.Session) -> DynamoRegistry:
    create_table(aws.client("dynamodb"), TABLE)
    return DynamoRegistry(aws.client("dynamodb"), TABLE)


@pytest.fixture
def fleet_file(tmp_path: Path, example_clusters: list[Cluster]) -> tuple[Path, dict[str, Cluster], dict[str, int]]:
    """A multi-account clusters.yaml: the examples, one cluster in another account, one in another region; the
    file, the foreign clusters by what differs, and the line of each cluster."""
    foreign = {
        "account": elsewhere(example_clusters[0], account="999999999999"),
        "region": elsewhere(example_clusters[1], region="us-east-1"),
    }
    path = tmp_path / "fleet.yaml"
    path.write_text(dump_clusters([*example_clusters, *foreign.values()], with_status=False))
    lines = path.read_text().splitlines()
    return path, foreign, {line.split("- id: ")[1]: n for n, line in enumerate(lines, 1) if line.startswith("- id: ")}


def refused(path: Path, cluster: Cluster, line: int, differs: str) -> str:
    return f"{path}:{line}: cluster {cluster.id}: {differs} is not {DEPLOYMENT}"


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_import_refuses_a_file_with_clusters_elsewhere_naming_each_and_writes_nothing(
    registry, fleet_file, dry_run
) -> None:
    path, foreign, lines = fleet_file
    result = invoke("registry", "import", *dry_run, str(path))
    assert result.exit_code == 1
    account, region = foreign["account"], foreign["region"]
    assert str(result.exception) == (
        f"{path}: 2 cluster(s) in another account or region ({ONLY_HERE}), nothing written: "
        f"{refused(path, region, lines[region.id], 'region us-east-1')}; "
        f"{refused(path, account, lines[account.id], 'infrastructure_account aws:999999999999')}; "
        "pass --skip-foreign to import the others"
    )
    assert registry.list_clusters() == []


def test_skip_foreign_imports_the_others_and_lists_the_skipped(registry, fleet_file) -> None:
    path, foreign, lines = fleet_file
    result = invoke("-o", "json", "registry", "import", "--skip-foreign", str(path))
    assert result.exit_code == 0, (result.output, result.exception)
    rows = {row["cluster"]: row["change"] for row in json.loads(result.stdout)}
    assert rows == {KUBE_1: "new", KUBE_2: "new", foreign["account"].id: "skipped", foreign["region"].id: "skipped"}
    account, region = foreign["account"], foreign["region"]
    assert result.stderr.splitlines() == [  # in file order (dump_clusters sorts by id)
        f"warning: skipped {refused(path, region, lines[region.id], 'region us-east-1')}",
        f"warning: skipped {refused(path, account, lines[account.id], 'infrastructure_account aws:999999999999')}",
    ]
    assert sorted(c.id for c in registry.list_clusters()) == [KUBE_1, KUBE_2]
    table = invoke("registry", "import", "--skip-foreign", "--dry-run", str(path))
    assert "would write 0 of 4 clusters, skipped 2 in another account or region" in " ".join(table.stdout.split())


def test_import_help_teaches_skip_foreign() -> None:
    text = " ".join(invoke("registry", "import", "--help").output.split())
    assert "CLM acts only in its own account and region" in text
    assert "--skip-foreign Leave out (and list) the clusters in another account or region than the caller's" in text


@pytest.mark.parametrize(
    ("assignment", "differs"),
    [
        ("infrastructure_account=aws:999999999999", "infrastructure_account aws:999999999999 is"),
        ("region=us-east-1", "region us-east-1 is"),
    ],
)
def test_set_refuses_to_place_a_cluster_elsewhere(clm, assignment, differs) -> None:  # noqa: F811
    run, store = clm
    before = store.get(KUBE_1)
    result = run("registry", "set", KUBE_1, assignment, ok=False)
    assert result.exit_code == 1
    assert str(result.exception) == (
        f"clm registry set: cluster {KUBE_1}: {differs} not {DEPLOYMENT}: {ONLY_HERE}; nothing written"
    )
    assert store.get(KUBE_1) == before


def test_plan_reads_a_cluster_elsewhere_where_it_lives_and_only_as_told(stacks_aws, fleet_file) -> None:
    """Another region of the caller's account: read there with the caller's credentials. Another account: only
    through --target-role (or --target-profile), and only if the session lands in the cluster's account; without one
    the error names both options. The hub's own account and region are left as they were."""
    path, foreign, _ = fleet_file
    before = aws_state(stacks_aws)
    account = foreign["account"]
    plan = ("plan", account.id, "--config", CONFIG, "--registry-file", str(path))
    result = invoke(*plan)
    assert result.exit_code == 1
    assert str(result.exception) == (
        f"cluster {account.id} is in account 999999999999, region eu-central-1, not the caller's (account "
        "123456789012, region eu-central-1): give --target-profile (a profile of that account) or --target-role (a "
        "role there you may assume); nothing was changed"
    )
    read = invoke("-o", "json", *plan, "--target-role", "arn:aws:iam::999999999999:role/reader")
    assert read.exit_code == 0, (read.output, read.exception)
    assert {stack["action"] for stack in json.loads(read.stdout)["stacks"]} == {"create"}  # none in 999999999999
    wrong = invoke(*plan, "--target-role", "arn:aws:iam::888888888888:role/elsewhere")
    assert str(wrong.exception) == (
        f"cluster {account.id}: role arn:aws:iam::888888888888:role/elsewhere is in account 888888888888, not the "
        "cluster's account 999999999999, region eu-central-1"
    )
    region = invoke("-o", "json", "plan", foreign["region"].id, "--config", CONFIG, "--registry-file", str(path))
    assert region.exit_code == 0, (region.output, region.exception)
    other_region = invoke(
        "--region", "eu-west-1", "-o", "json", "plan", KUBE_2, "--config", CONFIG, "--registry-file", str(path)
    )
    assert other_region.exit_code == 0, (other_region.output, other_region.exception)
    assert json.loads(other_region.stdout)["cluster"] == KUBE_2  # read in eu-central-1, where it lives
    assert aws_state(stacks_aws) == before


def test_the_examples_and_zalandos_samples_import_in_the_sandboxs_account_and_region(aws, registry, tmp_path) -> None:
    samples = tmp_path / "samples.yaml"
    samples.write_text(dump_clusters(list(sample_clusters(aws.client("ec2")).values()), with_status=False))
    for path in (Path(__file__).parents[2] / "examples" / "clusters.yaml", samples):
        result = invoke("-o", "json", "registry", "import", str(path))
        assert result.exit_code == 0, (result.output, result.exception)
        assert len(json.loads(result.stdout)) == 2 and result.stderr == ""
    assert len(registry.list_clusters()) == 3  # the zalando-aws sample is kube-1 too
