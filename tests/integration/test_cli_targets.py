"""`clm registry import` and `clm targets` against a hub deployed with clm:targetAccounts, on the sandbox with IAM
enforced (issue 27): the hub (`Clm`) in 123456789012/eu-central-1 may reach 222222222222, where `ClmTarget` is
deployed in eu-west-1 by that account's admin, and 333333333333, which has no target stack. The import reads the
deployed run function's settings: a cluster of 999999999999 is refused naming them, the others import. `clm targets`
then shows, from the hub's run function: the hub's own account and region (`hub`), the target (reachable, its stack
naming this hub), the allowed account without a target stack (unreachable: AssumeRole refused, the only calls IAM
refuses) and the account not allowed (no call)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from clm.cli.hub import HUB_ONLY
from clm.cli.main import cli
from clm.registry.clusters_yaml import dump_clusters, load_clusters
from clm.targets import DEPLOY_HINT, Target
from clm_sandbox.deploy import deploy_assembly
from clm_sandbox.deploy.synth import Assembly, read_assembly, synthesize
from clm_sandbox.iam import record
from tests.integration.deployment import ROOT, Deployment
from tests.unit.hub_stand_in import admin_session
from tests.unit.test_workflow_placement import elsewhere

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

HUB = Target("123456789012", "eu-central-1")
TARGET = Target("222222222222", "eu-west-1")
BARE = Target("333333333333", "eu-west-1")
OUTSIDE = Target("999999999999", "eu-west-1")
CONTEXT = {"clm:targetAccounts": f"{TARGET.account},{BARE.account}", "clm:hub": f"{HUB.account}:{HUB.region}"}
BARE_ROLE = f"arn:aws:iam::{BARE.account}:role/clm-target-{BARE.region}-run"


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """The app synthesized with the targets' context (overrides conftest's: the hub may reach 222... and 333...)."""
    return synthesize(tmp_path_factory.mktemp("cdk-out-targets"), "Clm", CONTEXT)


def clm(deployment: Deployment, *args: str) -> Result:
    table = deployment.outputs["RegistryTableName"]
    return CliRunner().invoke(cli, ["--table", table, *args], catch_exceptions=True)


@pytest.mark.iam_refusals  # the hub's AssumeRole in 333333333333, which has no target stack
def test_import_and_targets_judge_each_account_by_the_deployed_hubs_settings(
    deployment: Deployment, assembly: Assembly, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")  # the in-process handler's: else on the CLI's stdout
    admin = admin_session(deployment.session, TARGET)
    deploy_assembly(read_assembly(assembly.directory, "ClmTarget"), admin.client, TARGET.region)
    base = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    retired = dataclasses.replace(base, lifecycle_status="decommissioned")  # their runs end at begin
    clusters = {place: elsewhere(retired, account=place.account, region=place.region) for place in (TARGET, BARE)}
    clusters[HUB] = retired
    outside = elsewhere(retired, account=OUTSIDE.account, region=OUTSIDE.region)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(dump_clusters([*clusters.values(), outside], with_status=False))

    refused = clm(deployment, "registry", "import", str(fleet))
    assert refused.exit_code == 1
    assert f"1 cluster(s) in an account the hub may not reach ({HUB_ONLY}), nothing written: " in str(refused.exception)
    assert (
        f"cluster {outside.id}: account 999999999999 is not one this deployment may reach "
        "(clm:targetAccounts: 123456789012, 222222222222, 333333333333); pass --skip-foreign"
    ) in str(refused.exception)
    imported = clm(deployment, "-o", "json", "registry", "import", "--skip-foreign", str(fleet))
    assert imported.exit_code == 0, (imported.output, imported.exception)
    assert sorted(row["change"] for row in json.loads(imported.stdout)) == ["new", "new", "new", "skipped"]
    deployment.registry.put(outside)  # as a registry writer may: its runs are refused, `clm targets` shows why
    deployment.settle()

    record.clear()
    result = clm(deployment, "-o", "json", "targets")
    assert result.exit_code == 0, (result.output, result.exception)
    found = {Target(row["account"], row["region"]): row for row in json.loads(result.stdout)}
    assert {place: (r["allowed"], r["reachable"], r["stack"], r["stack_hub"]) for place, r in found.items()} == {
        HUB: (True, True, "hub", ""),
        TARGET: (True, True, "CREATE_COMPLETE", f"{HUB.account}:{HUB.region}"),
        BARE: (True, False, "", ""),
        OUTSIDE: (False, None, "", ""),
    }
    assert found[BARE]["why"] == f"the hub cannot assume {BARE_ROLE} (AccessDenied): {DEPLOY_HINT}"
    assert found[OUTSIDE]["why"].startswith("account 999999999999 is not one this deployment may reach")
    assert (found[HUB]["why"], found[TARGET]["why"]) == ("", "")
    assert {row["clusters"] for row in found.values()} == {1}
    refusals = [(j.action, j.resource) for j in record.judged() if j.refused]
    assert refusals == [("sts:AssumeRole", BARE_ROLE)]
