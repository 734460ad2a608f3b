"""Every table the CLI prints, in an 80-column terminal, with long but valid ids, names and texts: no line is longer
than 80 characters and every row is one line (its free text in notes under the table); `-o wide` shows every column
in full."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from rich.cells import cell_len

from clm.cli.output import console
from clm.model import Problem
from tests.unit.test_cli import EXAMPLES
from tests.unit.test_cli_encrypt import key, zalando  # noqa: F401  (the `key` fixture)
from tests.unit.test_cli_helpers import KUBE_1, KUBE_2, clm, deploy_clm_stack  # noqa: F401  (the `clm` fixture)
from tests.unit.test_cli_plan import KUBE1, KUBE1_POOL, NEW_AMI, REGISTRY_FILE, config_with_new_ami, deploy, plan
from tests.unit.test_stacks_support import clients, example_cluster, render, stacks_aws

__all__ = ["clients", "config_with_new_ami", "stacks_aws"]  # fixtures

LONG_LOCAL_ID = "payments-checkout-production-eu-central-1-blue"  # 46 of the 63 characters a local id may have
LONG = f"aws:123456789012:eu-central-1:{LONG_LOCAL_ID}"
VERSION = "3f9c2a7b1d04#Qm9vdGhhc2hiYXNlNjR1cmxzYWZlMDE"
PROBLEM = (
    f"StackFailed: stack nodepool-default-worker-{LONG.replace(':', '-')} failed: UPDATE_ROLLBACK_COMPLETE: "
    "Resource handler returned message: the launch template's instance profile does not exist"
)
WAITING = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}


def fleet_file(folder: Path) -> Path:
    """examples/clusters.yaml and a cluster with a long id, alias and node pool names, written to `folder`."""
    data = yaml.safe_load((EXAMPLES / "clusters.yaml").read_text())
    extra = {**data["clusters"][1], "id": LONG, "local_id": LONG_LOCAL_ID, "alias": "payments checkout (blue half)"}
    extra["node_pools"] = [
        {**pool, "name": name}
        for pool, name in zip(extra["node_pools"], ("default-worker", "batch-spot-c5-compute-optimised"), strict=True)
    ]
    path = folder / "clusters.yaml"
    path.write_text(yaml.safe_dump({"clusters": [*data["clusters"], extra]}))
    return path


@pytest.fixture
def narrow(monkeypatch):
    """An 80-column terminal."""
    monkeypatch.setattr(console, "width", 80)


@pytest.fixture
def fleet(clm, aws, tmp_path, narrow):  # noqa: F811
    """`clm` with the example clusters and the long one registered: all provisioned, the long one being updated by
    a running execution and with a long problem."""
    run, store = clm
    run("registry", "import", str(fleet_file(tmp_path)))
    for cluster_id in (KUBE_1, KUBE_2, LONG):
        store.record_success(cluster_id, VERSION)
    store.start_update(LONG, VERSION.upper())
    store.record_problem(LONG, Problem(title=PROBLEM))
    arn = deploy_clm_stack(aws, WAITING)
    execution = f"{LONG_LOCAL_ID}-5d41402abc4b-2925412"  # as reconcile names it: local id, hash, window
    aws.client("stepfunctions").start_execution(
        stateMachineArn=arn, name=execution, input=json.dumps({"cluster_id": LONG})
    )
    return run


def table_rows(output: str, header: str, count: int) -> list[str]:
    """The `count` rows under the table header that starts with `header`, after checking that no line of `output`
    exceeds 80 characters and that each row is one line (the next line continues none: a note, or nothing)."""
    lines = output.splitlines()
    assert max(cell_len(line) for line in lines) <= 80, output
    start = next(index for index, line in enumerate(lines) if line.split()[:1] == [header]) + 1
    rows, after = lines[start : start + count], lines[start + count : start + count + 1]
    assert len(rows) == count and all(row[:1].strip() for row in rows), output
    assert not after or after[0][:1] in "[" or not after[0][:1].isspace(), output
    return rows


def note(output: str, text: str) -> None:
    """`text` is a note of the output, perhaps wrapped over several lines (a word longer than a line is cut)."""
    assert "]" + "".join(text.split()) in "".join(output.split()), output


@pytest.mark.parametrize("command", [["status"], ["registry", "list"]])
def test_status_and_registry_list(fleet, command):
    output = fleet(*command).output
    rows = table_rows(output, "cluster", 3)
    assert [row.split()[0] for row in rows[:2]] == ["kube-1", "kube-2"]
    assert rows[2].split()[0].startswith("paym") and rows[2].split()[0].endswith("-blue")  # cut in the middle
    assert all(row.split()[2 + (command != ["status"])] == "3f9c2a7#Qm9vdGh" for row in rows)  # versions kept whole
    if command == ["status"]:
        note(output, PROBLEM)
        note(output, f"{LONG_LOCAL_ID}-5d41402abc4b-2925412")
    wide = fleet("-o", "wide", *command).output
    assert any(LONG in line and VERSION in line and VERSION.upper() in line for line in wide.splitlines())
    if command == ["status"]:
        assert any(line.startswith(LONG) and line.endswith(PROBLEM) for line in wide.splitlines())


def test_registry_import(clm, tmp_path, narrow):  # noqa: F811
    run = clm[0]
    output = run("registry", "import", "--dry-run", str(fleet_file(tmp_path))).output
    rows = table_rows(output, "cluster", 3)
    assert [row.split() for row in rows] == [["kube-1", "unchanged"], ["kube-2", "unchanged"], [LONG_LOCAL_ID, "new"]]
    wide = run("-o", "wide", "registry", "import", "--dry-run", str(fleet_file(tmp_path))).output
    assert [LONG, "new"] in [line.split() for line in wide.splitlines()]


def test_registry_set(clm, narrow):  # noqa: F811
    run = clm[0]
    taints = "dedicated=payments-checkout:NoSchedule,workload=batch-spot-compute-optimised:PreferNoSchedule"
    args = ("registry", "set", KUBE_2, f"node_pools.batch.config_items.taints={taints}", "--dry-run")
    output = run(*args).output
    [row] = table_rows(output, "field", 1)
    assert row.split() == ["node_pools.batch.config_items.taints", "dedicated=batch:NoSchedule", "[1]"]
    note(output, taints)
    wide = run("-o", "wide", *args).output
    assert ["node_pools.batch.config_items.taints", "dedicated=batch:NoSchedule", taints] in [
        line.split() for line in wide.splitlines()
    ]


def test_registry_reencrypt(aws, clm, key, narrow):  # noqa: F811
    run, store = clm
    foreign = run("encrypt", KUBE_2, "foreign", input="f").output.strip()
    kube1 = store.get(KUBE_1)
    items = {"legacy_database_password": zalando(aws, key), "kube_2_token_pasted_into_kube_1_by_mistake": foreign}
    store.put(dataclasses.replace(kube1, config_items={**kube1.config_items, **items}))
    output = run("registry", "reencrypt", "--dry-run", ok=False).output
    rows = table_rows(output, "cluster", 2)
    assert [row.split() for row in rows] == [
        ["kube-1", "kube_2_token_pasted_into_kube_1_by_mistake", "[1]"],
        ["kube-1", "legacy_database_password", "[2]"],
    ]
    note(output, "refused (InvalidCiphertextException): made for another cluster or item")
    note(output, "would bind")
    wide = run("-o", "wide", "registry", "reencrypt", "--dry-run", ok=False).output
    assert any(line.endswith("made for another cluster or item") for line in wide.splitlines())


def test_render(clm, tmp_path, narrow):  # noqa: F811
    run = clm[0]
    out = tmp_path / "rendered-for-review"
    args = ("render", "all", "--config", str(EXAMPLES / "config"), "--registry-file", str(fleet_file(tmp_path)))
    output = run(*args, "--out", str(out)).output
    rows = table_rows(output, "cluster", 3)
    assert [row.split()[0] for row in rows] == ["kube-1", "kube-2", "payments-checko…u-central-1-blue"]
    assert [row.split()[2:] for row in rows] == [
        ["[1]", "7", "no", "13"],
        ["[2]", "7", "no", "14"],
        ["[3]", "7", "no", "14"],
    ]
    note(output, "batch-spot-c5-compute-optimised, default-worker")
    assert f"written to {out}/<local id>/" in " ".join(output.split())
    wide = run("-o", "wide", *args, "--out", str(out)).output
    [long_row] = [line.split() for line in wide.splitlines() if line.startswith(LONG)]
    assert long_row[2:4] == ["batch-spot-c5-compute-optimised,", "default-worker"]
    assert long_row[-1] == str(out / LONG_LOCAL_ID)


def test_plan_instances(clients, stacks_aws, config_with_new_ami, narrow):
    deploy(clients, render(example_cluster("kube-1")))
    args = ("plan", KUBE1, "--config", config_with_new_ami, "--registry-file", REGISTRY_FILE)
    output = plan(*args).stdout
    rows = table_rows(output[output.index("node pool default-worker") :], "instance", 3)  # the stacks' lines before

    assert [row.split()[1:] for row in rows] == [
        [f"eu-central-1{zone}", "m5.large", "InService", "yes", "[1]"] for zone in "abc"
    ]
    note(output, "the stack update changes what the group launches (see the stack's launch changes)")
    wide = plan("-o", "wide", *args).stdout
    assert f"group {KUBE1_POOL}-" in wide
    reasons = [line for line in wide.splitlines() if line.startswith("i-")]
    assert len(reasons) == 3 and all(line.endswith("(see the stack's launch changes)") for line in reasons)
    assert NEW_AMI in wide
