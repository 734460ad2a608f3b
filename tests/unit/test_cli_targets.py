"""`clm targets` through the CLI, on the sandbox's moto with IAM enforced (tests/unit/hub_stand_in.py): every account
and region of the registry with its clusters' count and the hub's check of each, made by the hub's run function (the
real handler, invoked through Lambda as its role); `-o json` carries the same data unshortened. More targets than one
call takes are checked in several calls; a hub without the function's output, or whose function predates the step,
is named with the fix; `--help` says what each column means and how to fix a target."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator

import boto3
import pytest
from click.testing import CliRunner, Result

from clm.cli.main import cli
from clm.model import Cluster
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.targets import DEPLOY_HINT, Target
from clm.workflow.target_check import MAX_TARGETS
from clm_sandbox.iam import record
from tests.unit.hub_stand_in import RUN_FUNCTION, deploy_hub, deploy_target, stack_with_outputs
from tests.unit.test_lambda_run import lambda_logs
from tests.unit.test_workflow_placement import elsewhere
from tests.unit.test_workflow_target_check import EXPECTED, HUB, HUB_NAMED, SETTINGS, TARGET, deploy_targets

TABLE = "clm-registry"
__all__ = ["lambda_logs"]  # fixture


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["--table", TABLE, *args], catch_exceptions=True)


@pytest.fixture
def registry(sandbox_aws: boto3.Session, monkeypatch: pytest.MonkeyPatch, lambda_logs: io.StringIO) -> DynamoRegistry:
    """The registry table; the run function's metrics off and its logs in a buffer (its handler runs in this process:
    they would go to the CLI's standard output, which on Lambda they never reach)."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    create_table(sandbox_aws.client("dynamodb"), TABLE)
    return DynamoRegistry(sandbox_aws.client("dynamodb"), TABLE)


@pytest.fixture
def fleet(sandbox_aws: boto3.Session, registry: DynamoRegistry, example_clusters: list[Cluster]) -> Iterator[None]:
    """The targets of test_workflow_target_check deployed, the hub with its run function, and a cluster in each
    target (two in TARGET)."""
    deploy_targets(sandbox_aws)
    deploy_hub(sandbox_aws, SETTINGS)
    for target in EXPECTED:
        registry.put(elsewhere(example_clusters[0], account=target.account, region=target.region))
    second = elsewhere(example_clusters[0], account=TARGET.account, region=TARGET.region)
    registry.put(dataclasses.replace(second, id=f"{second.id}-b", local_id=f"{second.local_id}-b"))
    record.clear()
    yield
    assert [j for j in record.judged() if j.refused and j.action != "sts:AssumeRole"] == []


def test_each_target_with_its_clusters_and_the_hubs_check(fleet: None) -> None:
    result = invoke("-o", "json", "targets")
    assert result.exit_code == 0, (result.output, result.exception)
    rows = json.loads(result.stdout)
    found = {Target(r["account"], r["region"]): r for r in rows}
    assert list(found) == sorted(EXPECTED, key=lambda t: (t.account, t.region))
    assert {
        t: (r["allowed"], r["reachable"], r["stack"], r["stack_hub"], r["why"]) for t, r in found.items()
    } == EXPECTED
    assert {t: r["clusters"] for t, r in found.items()} == {t: 2 if t == TARGET else 1 for t in EXPECTED}
    refused = {j.resource for j in record.judged() if j.refused}  # only the AssumeRoles of targets without a role
    assert refused == {
        "arn:aws:iam::333333333333:role/clm-target-eu-west-1-run",
        "arn:aws:iam::123456789012:role/clm-target-us-east-1-run",
    }


def test_the_table_says_yes_no_or_dash_and_narrows_by_account_and_region(fleet: None) -> None:
    result = invoke("-o", "wide", "targets", "--account", "222222222222", "--account", "999999999999")
    assert result.exit_code == 0, (result.output, result.exception)
    lines = [line.split() for line in result.stdout.splitlines()]
    assert " ".join(lines[0]) == f"4 account(s) and region(s) of 5 clusters, hub {HUB_NAMED}"
    assert lines[1] == ["account", "region", "clusters", "allowed", "reachable", "stack", "why"]
    assert [line[:6] for line in lines[2:]] == [
        ["222222222222", "eu-central-1", "1", "yes", "yes", "none"],
        ["222222222222", "eu-west-1", "2", "yes", "yes", "CREATE_COMPLETE"],
        ["222222222222", "us-east-1", "1", "yes", "yes", "CREATE_COMPLETE"],
        ["999999999999", "eu-west-1", "1", "no", "-", "-"],
    ]
    assert lines[3][6:] == ["-"]
    assert " ".join(lines[4][6:]).startswith("stack ClmTarget names the hub 123456789012:eu-west-1, not this one")
    only_hub = invoke("-o", "json", "targets", "--region", HUB.region, "--account", HUB.account)
    assert [(r["stack"], r["clusters"]) for r in json.loads(only_hub.stdout)] == [("hub", 1)]


def test_more_targets_than_one_call_takes_are_checked_in_several_calls(
    sandbox_aws: boto3.Session, registry: DynamoRegistry, example_clusters: list[Cluster]
) -> None:
    """A registry naming more accounts than MAX_TARGETS: every one checked, and the hub assumes a role only in the
    account its settings allow."""
    deploy_target(sandbox_aws, TARGET, HUB_NAMED)
    deploy_hub(sandbox_aws, SETTINGS)
    accounts = [f"4{n:011d}" for n in range(MAX_TARGETS + 5)]
    for account in [*accounts, TARGET.account]:
        registry.put(elsewhere(example_clusters[0], account=account, region=TARGET.region))
    record.clear()
    result = invoke("-o", "json", "targets")
    assert result.exit_code == 0, (result.output, result.exception)
    rows = json.loads(result.stdout)
    assert [r["account"] for r in rows] == [TARGET.account, *accounts]  # by account
    assert [r["allowed"] for r in rows] == [True] + [False] * len(accounts)
    assumed = [j.resource for j in record.judged() if j.action == "sts:AssumeRole"]
    assert assumed == [f"arn:aws:iam::{TARGET.account}:role/clm-target-{TARGET.region}-run"]


def test_a_hub_without_its_run_functions_output_or_step_is_named_with_the_fix(
    sandbox_aws: boto3.Session, registry: DynamoRegistry, example_clusters: list[Cluster]
) -> None:
    registry.put(example_clusters[0])
    stack_with_outputs(sandbox_aws, "Older", {"RegistryTableName": TABLE})
    result = invoke("targets", "--stack", "Older")
    assert result.exit_code == 1
    assert str(result.exception).startswith(
        "stack Older has no output RunFunctionName (deployed by an older CLM: deploy it again)"
    )
    deploy_hub(
        sandbox_aws,
        SETTINGS,
        handler="from clm.workflow.lambda_handler import step_handler\nhandler = step_handler('run', {})\n",
    )
    result = invoke("targets")
    assert result.exit_code == 1
    assert str(result.exception) == (
        f"the hub's run function {RUN_FUNCTION} has no step check_targets: the hub was deployed by an older CLM; "
        "deploy it again (cdk deploy Clm, docs/deploy.md)"
    )


def test_an_empty_registry_lists_no_target_and_asks_nothing_of_the_hub(registry: DynamoRegistry) -> None:
    result = invoke("-o", "json", "targets", "--stack", "NotDeployed")
    assert result.exit_code == 0, (result.output, result.exception)
    assert json.loads(result.stdout) == []


def test_help_says_what_each_column_means_and_how_to_fix_a_target() -> None:
    text = " ".join(invoke("targets", "--help").output.split())
    for taught in (
        "allowed yes: the hub's settings allow the account (clm:targetAccounts, clm:targetInclude, clm:targetExclude",
        "reachable yes: the hub assumed its target role there (clm-target-<region>-run)",
        "`hub` in the hub's own account and region (which needs none), `none` when there is none",
        "cdk deploy Clm -c clm:targetAccounts=<account>,...",
        DEPLOY_HINT.replace("`", ""),
        "lambda:InvokeFunction on the run function",
    ):
        assert taught in text, taught
    assert "clm targets" in " ".join(invoke("--help").output.split())
