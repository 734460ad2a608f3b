"""`clm sandbox up --accounts N`: which target accounts, regions and clusters a sandbox of N accounts has, the
registry file and registry items written for them, the option's bounds, and what `up` and `status` print of them
(the sandbox's runner replaced by one that starts nothing)."""

from __future__ import annotations

import types
from pathlib import Path

import boto3
import pytest
from click.testing import CliRunner

from clm.cli import sandbox_cmd
from clm.cli.main import cli
from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.targets import Target
from clm_sandbox import daemon, targets
from clm_sandbox.deploy.examples import register_new, sandbox_clusters
from clm_sandbox.runner import SandboxError, SandboxState
from clm_sandbox.targets import TargetPlane

KUBE_1 = "aws:123456789012:eu-central-1:kube-1"


def plane(account: str, region: str, port: int) -> TargetPlane:
    name = f"kube-{account[-1]}"
    return TargetPlane(account, region, f"aws:{account}:{region}:{name}", f"https://127.0.0.1:{port}", f"/s/kc-{name}")


PLANES = [plane("222222222222", "eu-west-1", 7002), plane("333333333333", "eu-central-1", 7003)]


def test_a_sandbox_of_n_accounts_has_n_minus_one_targets_in_alternating_regions() -> None:
    assert targets.fleet_targets(1) == []
    assert targets.fleet_targets(3) == [Target("222222222222", "eu-west-1"), Target("333333333333", "eu-central-1")]
    assert targets.fleet_targets(4)[2] == Target("444444444444", "eu-west-1")
    assert [targets.cluster_id(t) for t in targets.fleet_targets(3)] == [p.cluster_id for p in PLANES]
    for count in (0, 5):
        with pytest.raises(ValueError, match=f"a sandbox has 1 to 4 accounts, not {count}"):
            targets.fleet_targets(count)
    assert sandbox_cmd.MAX_ACCOUNTS == targets.MAX_ACCOUNTS


def test_the_registry_file_holds_kube_1_and_a_copy_of_it_in_each_target(tmp_path: Path) -> None:
    path = tmp_path / "clusters.yaml"
    [alone] = sandbox_clusters(path)
    clusters = sandbox_clusters(path, PLANES)
    assert load_clusters(path.read_text()) == clusters
    assert clusters[0] == alone
    assert [(c.id, c.infrastructure_account, c.region, c.config_items["kube_auth_secret"]) for c in clusters] == [
        (KUBE_1, "aws:123456789012", "eu-central-1", "clm/kube-1"),
        (PLANES[0].cluster_id, "aws:222222222222", "eu-west-1", "clm/kube-2"),
        (PLANES[1].cluster_id, "aws:333333333333", "eu-central-1", "clm/kube-3"),
    ]
    kube_3 = clusters[2]
    assert (kube_3.local_id, kube_3.alias, kube_3.api_server_url) == (
        "kube-3",
        "sandbox-kube-3",
        "https://kube-3.sandbox.example.org",
    )
    assert kube_3.node_pools == alone.node_pools
    assert {k: v for k, v in kube_3.config_items.items() if k != "kube_auth_secret"} == {
        k: v for k, v in alone.config_items.items() if k != "kube_auth_secret"
    }


def test_only_clusters_new_to_the_registry_are_written(aws: boto3.Session, tmp_path: Path) -> None:
    create_table(aws.client("dynamodb"), "clm-registry")
    registry = DynamoRegistry(aws.client("dynamodb"), "clm-registry")
    clusters = sandbox_clusters(tmp_path / "clusters.yaml", PLANES)
    registry.put(clusters[0])
    assert register_new(registry, clusters) == (PLANES[0].cluster_id, PLANES[1].cluster_id)
    assert [c.id for c in registry.list_clusters()] == sorted(c.id for c in clusters)
    assert register_new(registry, clusters) == ()


def test_the_daemon_takes_one_to_four_accounts(capsys: pytest.CaptureFixture[str]) -> None:
    assert daemon._parser().parse_args(["--state-dir", "x"]).accounts == 1
    assert daemon._parser().parse_args(["--state-dir", "x", "--accounts", "4"]).accounts == 4
    with pytest.raises(SystemExit):
        daemon._parser().parse_args(["--state-dir", "x", "--accounts", "5"])
    assert "invalid choice: 5" in capsys.readouterr().err


class FakeRunner(types.SimpleNamespace):
    """clm_sandbox.runner that starts nothing: `up` records its options and returns the sandbox of `planes`."""

    SandboxError = SandboxError

    def __init__(self, planes: list[TargetPlane]) -> None:
        super().__init__(options=None)
        self.state = SandboxState(
            pid=1,
            moto_endpoint="http://127.0.0.1:7000",
            kube_apiserver="https://127.0.0.1:7001",
            kubeconfig="/s/kubeconfig",
            region="eu-central-1",
            log="/s/sandbox.log",
            targets=[vars(p) for p in planes],
        )

    def up(self, options: dict[str, float | int], progress: object) -> SandboxState:
        self.options = options
        return self.state

    def status(self) -> SandboxState:
        return self.state


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> FakeRunner:
    fake = FakeRunner(PLANES)
    monkeypatch.setattr(sandbox_cmd, "_runner", lambda: fake)
    return fake


def test_up_asks_for_the_accounts_and_shows_each_with_its_control_plane(runner: FakeRunner) -> None:
    result = CliRunner().invoke(cli, ["sandbox", "up", "--bare", "--accounts", "3"])
    assert result.exit_code == 0, result.output
    assert runner.options == {"boot_delay": 2.0, "pod_ready_delay": 0.5, "time_scale": 1.0, "accounts": 3}
    lines = result.output.splitlines()
    start = lines.index("Accounts (the hub's, then its targets'):")
    assert lines[start + 1 : start + 4] == [
        "  123456789012  eu-central-1  hub     kube-1  https://127.0.0.1:7001  /s/kubeconfig",
        "  222222222222  eu-west-1     target  kube-2  https://127.0.0.1:7002  /s/kc-kube-2",
        "  333333333333  eu-central-1  target  kube-3  https://127.0.0.1:7003  /s/kc-kube-3",
    ]
    status = CliRunner().invoke(cli, ["sandbox", "status"])
    assert status.exit_code == 0 and lines[start : start + 4] == status.output.splitlines()[start : start + 4]


def test_up_refuses_other_accounts_than_a_running_sandbox_has_unless_left_to_its_default(runner: FakeRunner) -> None:
    result = CliRunner().invoke(cli, ["sandbox", "up", "--bare", "--accounts", "2"])
    assert result.exit_code == 1
    assert str(result.exception) == "a sandbox of 3 account(s) is running: stop it first (`clm sandbox down`)"
    assert CliRunner().invoke(cli, ["sandbox", "up", "--bare"]).exit_code == 0  # the running one, as it is


@pytest.mark.parametrize("count", ["0", "5", "two"])
def test_up_takes_one_to_four_accounts(runner: FakeRunner, count: str) -> None:
    result = CliRunner().invoke(cli, ["sandbox", "up", "--accounts", count])
    assert result.exit_code == 2
    assert "Invalid value for '--accounts'" in result.output
    assert runner.options is None


def test_a_sandbox_of_one_account_shows_no_accounts(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeRunner([])
    monkeypatch.setattr(sandbox_cmd, "_runner", lambda: fake)
    result = CliRunner().invoke(cli, ["sandbox", "up", "--bare"])
    assert result.exit_code == 0 and "Accounts" not in result.output
    assert fake.options["accounts"] == 1


def test_a_fleets_next_steps_name_a_target_cluster_and_its_kubeconfig(
    runner: FakeRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clm_sandbox.deploy.examples import Deployed

    ids = tuple(p.cluster_id for p in PLANES)
    outputs = {"RegistryTableName": "clm-registry", "ConfigBucketName": "bucket"}
    deployed = Deployed(outputs, 9, Path("/s/clusters.yaml"), KUBE_1, ids, (KUBE_1, *ids))
    monkeypatch.setattr(sandbox_cmd, "_deploy", lambda state: deployed)
    result = CliRunner().invoke(cli, ["sandbox", "up", "--accounts", "3"])
    assert result.exit_code == 0, result.output
    for line in (
        "  targets:         ClmTarget in 222222222222/eu-west-1, 333333333333/eu-central-1, each deployed as its "
        "account's admin",
        "  registry file:   /s/clusters.yaml (3 clusters, each on its own control plane)",
        "  registered:      3 new, their first runs start (as `clm registry import` of the file would)",
        f"  clm provision {PLANES[0].cluster_id} --follow",
        "  clm registry list --account 222222222222",
        "  KUBECONFIG=/s/kc-kube-2 kubectl get nodes",
        f"  clm plan {KUBE_1} --config s3://bucket/config",
        f"  clm plan {PLANES[0].cluster_id} --config s3://bucket/config --target-role "
        "arn:aws:iam::222222222222:role/OrganizationAccountAccessRole",
        "  clm targets",
    ):
        assert line in result.output.splitlines(), line
    assert "clm registry import /s/clusters.yaml" not in result.output
