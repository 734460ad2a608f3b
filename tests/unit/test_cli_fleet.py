"""`clm status` and `clm registry list` over a fleet in several accounts and regions: `--account` and `--region`
narrow the list; the table shows account and region only where the clusters listed differ (kube-1 of two accounts
would otherwise look alike); JSON always carries both."""

from __future__ import annotations

import dataclasses
import json

import pytest

from clm.cli.output import console
from tests.unit.test_cli_helpers import clm  # noqa: F401  (the `clm` fixture)

FLEET = [("222222222222", "eu-west-1"), ("333333333333", "eu-central-1")]


@pytest.fixture
def fleet(clm, monkeypatch):  # noqa: F811
    """The examples (account 123456789012, eu-central-1) plus a kube-1 in each of two more accounts."""
    run, store = clm
    [example] = [c for c in store.list_clusters() if c.local_id == "kube-1"]
    for account, region in FLEET:
        store.put(
            dataclasses.replace(
                example,
                id=f"aws:{account}:{region}:kube-1",
                infrastructure_account=f"aws:{account}",
                region=region,
                api_server_url=f"https://kube-1.{account}.example.org",
            )
        )
    monkeypatch.setattr(console, "width", 120)
    return run


@pytest.mark.parametrize("command", [["status"], ["registry", "list"]])
def test_the_table_tells_clusters_of_other_accounts_and_regions_apart(fleet, command):
    table = fleet(*command).output
    header = next(line for line in table.splitlines() if line.startswith("cluster"))
    assert header.split()[:3] == ["cluster", "account", "region"]
    rows = [line.split()[:3] for line in table.splitlines() if line.startswith("kube-1 ")]
    assert sorted(rows) == [
        ["kube-1", "123456789012", "eu-central-1"],
        ["kube-1", "222222222222", "eu-west-1"],
        ["kube-1", "333333333333", "eu-central-1"],
    ]


@pytest.mark.parametrize("command", [["status"], ["registry", "list"]])
def test_account_and_region_filters_narrow_the_list(fleet, command):
    rows = json.loads(fleet("-o", "json", *command, "--account", "222222222222", "--account", "333333333333").stdout)
    assert sorted((row["account"], row["region"]) for row in rows) == sorted(FLEET)
    [row] = json.loads(fleet("-o", "json", *command, "--region", "eu-west-1").stdout)
    assert row["id"] == "aws:222222222222:eu-west-1:kube-1"
    only_home = fleet(*command, "--account", "123456789012").stdout
    header = next(line for line in only_home.splitlines() if line.startswith("cluster"))
    assert "account" not in header and "123456789012" not in only_home  # all in one account: no such column
