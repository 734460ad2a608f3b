"""`clm plan` on in-process moto (with the sandbox's CloudFormation and Auto Scaling patches): create, no change,
a changed AMI, instances outdated now, a removed node pool, a broken template; and never a write."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from click.testing import CliRunner

from clm.cli.main import cli, main
from clm.config.local import LocalSource
from clm.registry.clusters_yaml import dump_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.render.node_files import OUTPUTS_VALUE, PendingOutputs
from clm.render.renderer import Renderer
from clm.stacks.deploy import check, start
from clm.stacks.spec import cluster_stack_spec, node_pool_stack_spec
from tests.unit.test_stacks_support import EXAMPLES, Clients, clients, example_cluster, moto_stack, render, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures

KUBE1 = "aws:123456789012:eu-central-1:kube-1"
KUBE1_POOL = "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1"
EXAMPLE_AMI = "ami-0c1a7f89451184c8b"
NEW_AMI = "ami-0123456789abcdef0"
REGISTRY_FILE = str(EXAMPLES / "clusters.yaml")
CONFIG = str(EXAMPLES / "config")


def plan(*args: str, ok: bool = True) -> Any:
    """Run `clm plan` in-process; the result of the CLI run."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr, result.exception)
    return result


def plan_json(*args: str, cluster_id: str = KUBE1, config: str = CONFIG) -> dict[str, Any]:
    return json.loads(
        plan("-o", "json", *args, "plan", cluster_id, "--config", config, "--registry-file", REGISTRY_FILE).stdout
    )


def deploy(clients: Clients, rendered: Any) -> None:
    """Every stack of the rendered cluster created or updated (clm.stacks start), and complete."""
    cfn = clients["cloudformation"]
    specs = [
        cluster_stack_spec(rendered),
        *(node_pool_stack_spec(rendered, p.name) for p in rendered.cluster.node_pools),
    ]
    for spec in specs:
        start(cfn, clients["s3"], spec)
        assert check(cfn, spec.name).state == "complete", spec.name


def aws_state(session: boto3.Session, region: str = "eu-central-1") -> dict[str, Any]:
    """What a write to CloudFormation, Auto Scaling, EC2, S3 or DynamoDB would change, as moto holds it."""
    cfn, ec2 = session.client("cloudformation", region), session.client("ec2", region)
    stacks = cfn.describe_stacks()["Stacks"]
    return {
        "stacks": stacks,
        "events": {s["StackName"]: cfn.describe_stack_events(StackName=s["StackId"])["StackEvents"] for s in stacks},
        "templates": {s["StackName"]: cfn.get_template(StackName=s["StackId"])["TemplateBody"] for s in stacks},
        "groups": session.client("autoscaling", region).describe_auto_scaling_groups()["AutoScalingGroups"],
        "launch_templates": ec2.describe_launch_templates()["LaunchTemplates"],
        "instances": ec2.describe_instances()["Reservations"],
        "buckets": session.client("s3", region).list_buckets()["Buckets"],
        "tables": {
            name: session.client("dynamodb", region).scan(TableName=name)["Items"]
            for name in session.client("dynamodb", region).list_tables()["TableNames"]
        },
    }


@pytest.fixture
def config_with_new_ami(tmp_path: Path) -> str:
    """examples/config with another worker AMI in config-defaults.yaml."""
    config = tmp_path / "config"
    shutil.copytree(EXAMPLES / "config", config)
    defaults = config / "cluster" / "config-defaults.yaml"
    defaults.write_text(defaults.read_text().replace(EXAMPLE_AMI, NEW_AMI))
    return str(config)


def test_a_new_cluster_creates_every_stack_and_writes_nothing(stacks_aws):
    before = aws_state(stacks_aws)
    data = plan_json(cluster_id="aws:123456789012:eu-central-1:kube-2")
    assert [(s["stack_name"], s["node_pool"], s["action"]) for s in data["stacks"]] == [
        ("kube-2", None, "create"),
        ("nodepool-default-worker-aws-123456789012-eu-central-1-kube-2", "default-worker", "create"),
        ("nodepool-batch-aws-123456789012-eu-central-1-kube-2", "batch", "create"),
    ]
    assert [s["file"] for s in data["stacks"]] == [
        "cluster/stack.yaml",
        "cluster/node-pools/worker-default/stack.yaml",
        "cluster/node-pools/worker-spot/stack.yaml",
    ]
    assert [(p["node_pool"], p["instances"]) for p in data["node_pools"]] == [("default-worker", []), ("batch", [])]
    assert data["drain_preflight"] == {"checked": False, "warning": "", "nodes": []}
    assert data["version"] == render(example_cluster("kube-2")).version
    assert data["version"].startswith(data["config"]["version"] + "#")
    assert aws_state(stacks_aws) == before


def test_deployed_cluster_has_no_change(clients, stacks_aws):
    deploy(clients, render(example_cluster("kube-1")))
    before = aws_state(stacks_aws)
    result = plan("-o", "json", "plan", KUBE1, "--config", CONFIG, "--registry-file", REGISTRY_FILE)
    data = json.loads(result.stdout)
    assert [(s["action"], s["status"], s["template_diff"], s["parameters"], s["tags"]) for s in data["stacks"]] == [
        ("no change", "CREATE_COMPLETE", "", [], []),
        ("no change", "CREATE_COMPLETE", "", [], []),
    ]
    [pool] = data["node_pools"]
    assert (pool["node_pool"], pool["desired"], pool["outdated"], len(pool["instances"])) == ("default-worker", 3, 0, 3)
    assert all(not i["outdated"] and i["reasons"] == [] for i in pool["instances"])
    assert data["drain_preflight"]["checked"] is False
    assert result.stderr == ""  # nothing to drain: the cluster is not even asked
    assert aws_state(stacks_aws) == before


def test_changed_ami_is_a_diff_naming_it_and_every_instance_is_outdated(clients, stacks_aws, config_with_new_ami):
    deploy(clients, render(example_cluster("kube-1")))
    before = aws_state(stacks_aws)
    result = plan("-o", "json", "plan", KUBE1, "--config", config_with_new_ami, "--registry-file", REGISTRY_FILE)
    data = json.loads(result.stdout)
    cluster_stack, pool_stack = data["stacks"]
    assert cluster_stack["action"] == "no change"
    assert pool_stack["action"] == "update"
    diff = pool_stack["template_diff"].splitlines()
    assert diff[:2] == [f"--- {KUBE1_POOL} (deployed)", "+++ cluster/node-pools/worker-default/stack.yaml (rendered)"]
    assert f'-        ImageId: "{EXAMPLE_AMI}"' in diff
    assert f'+        ImageId: "{NEW_AMI}"' in diff
    assert pool_stack["launch_changes"] == [
        f"LaunchTemplate.LaunchTemplateData.ImageId: {EXAMPLE_AMI} -> {NEW_AMI}",
        "LaunchTemplate.LaunchTemplateData.UserData: changed",  # the user data names the image too
    ]
    [pool] = data["node_pools"]
    assert pool["outdated"] == len(pool["instances"]) == 3
    assert {tuple(i["reasons"]) for i in pool["instances"]} == {
        ("the stack update changes what the group launches (see the stack's launch changes)",)
    }
    # The example cluster's API server is not reachable from here: one warning line, and the plan goes on.
    warning = data["drain_preflight"]["warning"]
    assert data["drain_preflight"]["checked"] is False
    assert "cluster aws:123456789012:eu-central-1:kube-1" in warning
    assert result.stderr.splitlines() == [f"warning: {warning}"]
    assert aws_state(stacks_aws) == before


def test_table_output_shows_the_diff_and_the_instances_to_replace(clients, stacks_aws, config_with_new_ami):
    deploy(clients, render(example_cluster("kube-1")))
    result = plan("plan", KUBE1, "--config", config_with_new_ami, "--registry-file", REGISTRY_FILE)
    lines = result.stdout.splitlines()
    assert "stack kube-1 (cluster/stack.yaml): no change [CREATE_COMPLETE]" in lines[1]
    assert f"stack {KUBE1_POOL} (cluster/node-pools/worker-default/stack.yaml): update" in lines[2]
    assert f'  +        ImageId: "{NEW_AMI}"' in lines
    assert f"  launch change LaunchTemplate.LaunchTemplateData.ImageId: {EXAMPLE_AMI} -> {NEW_AMI}" in lines
    assert "3 instances, 3 to replace" in result.stdout
    assert [line.split()[4] for line in lines if line.startswith("i-")] == ["yes"] * 3
    assert "the stack update changes what the group launches" in " ".join(result.stdout.split())


def test_instances_outdated_now_are_shown_with_the_inventorys_reasons(clients, stacks_aws, config_with_new_ami):
    cluster = example_cluster("kube-1")
    deploy(clients, render(cluster))
    deploy(clients, render(cluster, worker_ami=NEW_AMI))  # the stack is updated, its instances not yet replaced
    data = plan_json(config=config_with_new_ami)
    assert [s["action"] for s in data["stacks"]] == ["no change", "no change"]
    [pool] = data["node_pools"]
    assert [i["reasons"] for i in pool["instances"]] == [["launch template version 1, the group uses 2"]] * 3


def test_a_pool_gone_from_the_registry_is_deleted_after_draining_all_its_instances(clients, stacks_aws, tmp_path):
    cluster = example_cluster("kube-1")
    deploy(clients, render(cluster))
    renamed = dataclasses.replace(cluster.node_pool("default-worker"), name="workers")
    registry_file = tmp_path / "clusters.yaml"
    registry_file.write_text(dump_clusters([dataclasses.replace(cluster, node_pools=[renamed])], with_status=False))
    before = aws_state(stacks_aws)
    data = json.loads(
        plan("-o", "json", "plan", KUBE1, "--config", CONFIG, "--registry-file", str(registry_file)).stdout
    )
    assert [(s["node_pool"], s["action"]) for s in data["stacks"]] == [
        (None, "no change"),
        ("workers", "create"),
        ("default-worker", "delete"),
    ]
    removed = data["node_pools"][1]
    assert (removed["node_pool"], removed["removed"], removed["outdated"]) == ("default-worker", True, 3)
    assert {tuple(i["reasons"]) for i in removed["instances"]} == {("the node pool is gone from the cluster",)}
    assert aws_state(stacks_aws) == before


def test_a_pool_stack_whose_creation_rolled_back_is_recreated_without_instances(clients, stacks_aws):
    deploy(clients, render(example_cluster("kube-1")))
    moto_stack(KUBE1_POOL).status = "ROLLBACK_COMPLETE"
    data = plan_json()
    assert [(s["action"], s["status"]) for s in data["stacks"]] == [
        ("no change", "CREATE_COMPLETE"),
        ("recreate", "ROLLBACK_COMPLETE"),
    ]
    assert [(p["instances"], p["error"]) for p in data["node_pools"]] == [([], "")]


def test_plan_from_the_registry_table_as_yaml(clients, stacks_aws):
    create_table(clients["dynamodb"], "clm-registry")
    DynamoRegistry(clients["dynamodb"], "clm-registry").put(example_cluster("kube-1"))
    before = aws_state(stacks_aws)
    data = yaml.safe_load(plan("-o", "yaml", "plan", KUBE1, "--config", CONFIG).stdout)
    assert (data["cluster"], [s["action"] for s in data["stacks"]]) == (KUBE1, ["create", "create"])
    assert aws_state(stacks_aws) == before


def test_unknown_cluster_is_one_error(stacks_aws):
    result = plan("plan", "aws:1:nowhere", "--config", CONFIG, "--registry-file", REGISTRY_FILE, ok=False)
    assert str(result.exception) == "cluster aws:1:nowhere is not in the registry"


def test_broken_template_is_one_line_with_file_and_line_before_any_aws_call(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config"
    shutil.copytree(EXAMPLES / "config", config)
    stack = config / "cluster" / "node-pools" / "worker-default" / "stack.yaml"
    lines = stack.read_text().splitlines()
    line_number = next(n for n, text in enumerate(lines, 1) if "InstanceType:" in text)
    lines[line_number - 1] = "        InstanceType: {{ node_pool.no_such_field }}"
    stack.write_text("\n".join(lines) + "\n")
    # Any AWS call would fail with "cannot reach": the render error comes first.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setattr(sys, "argv", ["clm", "plan", KUBE1, "--config", str(config), "--registry-file", REGISTRY_FILE])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith(f"error: cluster {KUBE1}: cluster/node-pools/worker-default/stack.yaml:{line_number}: ")
    assert "no_such_field" in line


def test_a_pool_reading_the_cluster_stacks_outputs_is_planned_with_them(clients, stacks_aws, tmp_path):
    """A node-pool template reading `values.ClusterStackOutputs` (CLM's provisioner/node_pools.go hands them to every
    pool): the plan renders it with the live stack's outputs, as the run does, so an unchanged pool is no change
    (not a diff against placeholders); with no cluster stack yet the outputs are placeholders, and `clm render`,
    which reads no stack, renders it too."""
    config = tmp_path / "config"
    shutil.copytree(EXAMPLES / "config", config)
    pool_stack = config / "cluster" / "node-pools" / "worker-default" / "stack.yaml"
    old = "Description: {{ ('CLM node pool ' ~ node_pool.name ~ ' of ' ~ cluster.id) | yaml }}"
    reading = "Description: {{ ('security group ' ~ values.ClusterStackOutputs.NodeSecurityGroup) | yaml }}"
    pool_stack.write_text(pool_stack.read_text().replace(old, reading))
    cluster = example_cluster("kube-1")
    plain = Renderer(LocalSource(config).fetch()).render(cluster, {OUTPUTS_VALUE: PendingOutputs()})
    assert (
        plain.node_pool_stacks["default-worker"].template["Description"] == "security group pending-NodeSecurityGroup"
    )
    cfn = clients["cloudformation"]
    start(cfn, clients["s3"], cluster_stack_spec(plain))
    outputs = {
        o["OutputKey"]: o["OutputValue"] for o in cfn.describe_stacks(StackName="kube-1")["Stacks"][0]["Outputs"]
    }
    live = Renderer(LocalSource(config).fetch()).render(cluster, {OUTPUTS_VALUE: outputs})
    start(cfn, clients["s3"], node_pool_stack_spec(live, "default-worker"))
    data = plan_json(config=str(config))
    assert [(s["node_pool"], s["action"]) for s in data["stacks"]] == [
        (None, "no change"),
        ("default-worker", "no change"),
    ]
    rendered = CliRunner().invoke(cli, ["render", "all", "--config", str(config), "--registry-file", REGISTRY_FILE])
    assert rendered.exit_code == 0, rendered.output
