"""`clm registry import|set` refuse a cluster in an account the deployed hub may not reach (the hub's own, the
caller's, and those its run function's CLM_TARGET_* settings allow: clm:targetAccounts, clm:targetInclude,
clm:targetExclude), naming file, line, cluster, account and setting, before any write; other regions and allowed
accounts import. Without a readable deployment only the caller's account is allowed, and the refusal says why.
`--skip-foreign` imports a multi-account file's part this hub manages. `clm plan`, which still acts with the caller's
credentials, refuses a cluster outside the caller's account and region (in-process moto: the caller in
123456789012, eu-central-1; the hub a stand-in, tests/unit/hub_stand_in.py)."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from click.testing import CliRunner, Result

from clm.cli.hub import HUB_ONLY
from clm.cli.main import cli
from clm.model import Cluster
from clm.registry.clusters_yaml import dump_clusters, load_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table
from tests.corpus_samples import sample_clusters
from tests.unit.hub_stand_in import deploy_hub
from tests.unit.test_cli import EXAMPLES
from tests.unit.test_cli_helpers import KUBE_1, KUBE_2, TABLE, clm  # noqa: F401  (the `clm` fixture)
from tests.unit.test_cli_plan import CONFIG, aws_state
from tests.unit.test_stacks_support import stacks_aws
from tests.unit.test_workflow_placement import elsewhere

__all__ = ["stacks_aws"]  # fixture

READS = [
    "cloudformation:Describe*",
    "cloudformation:Get*",
    "cloudformation:List*",
    "autoscaling:Describe*",
    "ec2:Describe*",
]
ONLY_HERE = "CLM acts only in its own account and region"
EXAMPLE = load_clusters((EXAMPLES / "clusters.yaml").read_text())[0]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["--table", TABLE, *args], catch_exceptions=True)


@pytest.fixture
def registry(aws: boto3.Session) -> DynamoRegistry:
    create_table(aws.client("dynamodb"), TABLE)
    return DynamoRegistry(aws.client("dynamodb"), TABLE)


@pytest.fixture
def fleet_file(tmp_path: Path, example_clusters: list[Cluster]) -> tuple[Path, dict[str, Cluster], dict[str, int]]:
    """A multi-account clusters.yaml: the examples, one cluster in an account the hub may not reach, one in another
    region of the caller's account, one in a target account; the file, those clusters by where they are, and the
    line of each cluster."""
    foreign = {
        "account": elsewhere(example_clusters[0], account="999999999999"),
        "region": elsewhere(example_clusters[1], region="us-east-1"),
        "target": elsewhere(example_clusters[1], account="222222222222", region="eu-west-1"),
    }
    path = tmp_path / "fleet.yaml"
    path.write_text(dump_clusters([*example_clusters, *foreign.values()], with_status=False))
    lines = path.read_text().splitlines()
    return path, foreign, {line.split("- id: ")[1]: n for n, line in enumerate(lines, 1) if line.startswith("- id: ")}


@pytest.fixture
def hub(aws: boto3.Session) -> boto3.Session:
    """The deployed hub (stack Clm) allowing 222222222222 besides its own account."""
    deploy_hub(aws, {"CLM_TARGET_ACCOUNTS": "222222222222"})
    return aws


ALLOWED = "clm:targetAccounts: 123456789012, 222222222222"


def refused(path: Path, cluster: Cluster, line: int, setting: str = ALLOWED) -> str:
    return f"{path}:{line}: cluster {cluster.id}: {not_reached(cluster, setting)}"


def not_reached(cluster: Cluster, setting: str = ALLOWED) -> str:
    return f"account {cluster.account_id} is not one this deployment may reach ({setting})"


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_import_refuses_a_file_with_clusters_the_hub_may_not_reach_naming_each_and_writes_nothing(
    registry, hub, fleet_file, dry_run
) -> None:
    path, foreign, lines = fleet_file
    result = invoke("registry", "import", *dry_run, str(path))
    assert result.exit_code == 1
    account = foreign["account"]
    assert str(result.exception) == (
        f"{path}: 1 cluster(s) in an account the hub may not reach ({HUB_ONLY}), nothing written: "
        f"{refused(path, account, lines[account.id])}; pass --skip-foreign to import the others"
    )
    assert registry.list_clusters() == []


def test_skip_foreign_imports_the_others_and_lists_the_skipped(registry, hub, fleet_file) -> None:
    path, foreign, lines = fleet_file
    result = invoke("-o", "json", "registry", "import", "--skip-foreign", str(path))
    assert result.exit_code == 0, (result.output, result.exception)
    rows = {row["cluster"]: row["change"] for row in json.loads(result.stdout)}
    account, region, target = foreign["account"], foreign["region"], foreign["target"]
    assert rows == {KUBE_1: "new", KUBE_2: "new", account.id: "skipped", region.id: "new", target.id: "new"}
    assert result.stderr.splitlines() == [f"warning: skipped {refused(path, account, lines[account.id])}"]
    assert sorted(c.id for c in registry.list_clusters()) == sorted([KUBE_1, KUBE_2, region.id, target.id])
    table = invoke("registry", "import", "--skip-foreign", "--dry-run", str(path))
    assert "would write 0 of 5 clusters, skipped 1 in an account the hub may not reach" in " ".join(
        table.stdout.split()
    )


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ({"CLM_TARGET_ACCOUNTS": "*", "CLM_TARGET_EXCLUDE": "9{12}"}, "matches clm:targetExclude 9{12}"),
        ({"CLM_TARGET_ACCOUNTS": "*", "CLM_TARGET_INCLUDE": "2{12}"}, "does not match clm:targetInclude 2{12}"),
        ({}, "is not one this deployment may reach (clm:targetAccounts: 123456789012)"),
    ],
)
def test_import_names_the_hubs_setting_that_refuses_an_account(aws, registry, fleet_file, settings, why) -> None:
    deploy_hub(aws, settings)
    path, foreign, lines = fleet_file
    result = invoke("registry", "import", "--dry-run", str(path))
    account = foreign["account"]
    assert result.exit_code == 1
    assert f"{path}:{lines[account.id]}: cluster {account.id}: account 999999999999 {why}; pass" in str(
        result.exception
    )


def test_without_a_readable_deployment_only_the_callers_account_is_allowed_and_the_refusal_says_why(
    registry, fleet_file
) -> None:
    path, foreign, lines = fleet_file
    result = invoke("registry", "import", "--stack", "NotDeployed", str(path))
    assert result.exit_code == 1
    own = "clm:targetAccounts: 123456789012"
    unknown = "; the hub's settings could not be read (stack NotDeployed not found ("
    assert str(result.exception).startswith(  # in file order: by id
        f"{path}: 2 cluster(s) in an account the hub may not reach ({HUB_ONLY}), nothing written: "
        f"{refused(path, foreign['target'], lines[foreign['target'].id], own)}{unknown}"
    )
    assert f"{refused(path, foreign['account'], lines[foreign['account'].id], own)}{unknown}" in str(result.exception)
    assert "only its own account is known to be allowed" in str(result.exception)
    assert registry.list_clusters() == []
    imported = invoke("-o", "json", "registry", "import", "--stack", "NotDeployed", "--skip-foreign", str(path))
    assert {row["cluster"] for row in json.loads(imported.stdout) if row["change"] == "new"} == {
        KUBE_1,
        KUBE_2,
        foreign["region"].id,
    }


def test_import_help_teaches_skip_foreign_and_targets() -> None:
    text = " ".join(invoke("registry", "import", "--help").output.split())
    assert "The hub acts only in the accounts its deployment (--stack) may reach" in text
    assert "`clm targets` then checks that the hub can reach each account and region" in text
    assert "--skip-foreign Leave out (and list) the clusters in an account the deployed hub may not reach" in text


@pytest.mark.parametrize(
    ("assignment", "refusal"),
    [
        ("infrastructure_account=aws:999999999999", not_reached(elsewhere(EXAMPLE, account="999999999999"))),
        ("infrastructure_account=aws:222222222222", ""),
        ("region=us-east-1", ""),
    ],
)
def test_set_refuses_to_place_a_cluster_where_the_hub_may_not_reach(clm, hub, assignment, refusal) -> None:  # noqa: F811
    run, store = clm
    before = store.get(KUBE_1)
    result = run("registry", "set", KUBE_1, assignment, ok=not refusal)
    if refusal:
        assert result.exit_code == 1
        assert str(result.exception) == f"clm registry set: cluster {KUBE_1}: {refusal}: {HUB_ONLY}; nothing written"
        assert store.get(KUBE_1) == before
    else:
        field, value = assignment.split("=")
        assert getattr(store.get(KUBE_1), field) == value


def reader_role(session: boto3.Session, monkeypatch: pytest.MonkeyPatch, account: str, name: str) -> None:
    """A read-only role `name` in `account` trusting the caller's account (made as that account's admin)."""
    trust = {"Effect": "Allow", "Principal": {"AWS": "123456789012"}, "Action": "sts:AssumeRole"}
    reading = {"Effect": "Allow", "Action": READS, "Resource": "*"}
    with monkeypatch.context() as patched:
        patched.setenv("MOTO_ACCOUNT_ID", account)
        iam = session.client("iam")
        iam.create_role(
            RoleName=name, AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [trust]})
        )
        iam.put_role_policy(
            RoleName=name,
            PolicyName="read",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [reading]}),
        )


def test_plan_reads_a_cluster_elsewhere_where_it_lives_and_only_as_told(stacks_aws, fleet_file, monkeypatch) -> None:
    """Another region of the caller's account: read there with the caller's credentials. Another account: only
    through --target-role (or --target-profile), and only if the session lands in the cluster's account; without one
    the error names both options. The hub's own account and region are left as they were."""
    for account, name in (("999999999999", "reader"), ("888888888888", "elsewhere")):
        reader_role(stacks_aws, monkeypatch, account, name)
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
