"""`clm plan` and `clm render` with what they read from the deployment (clm.cli.deployment_settings) on in-process
moto. CLM's etcd stack: the row first, create then no change, only when the deployment (the `Clm` stack's output
ManageEtcdStack) or --manage-etcd says so, a stack policy other than CLM's as a change, the archive's path in the
deployment's node-files bucket, nothing uploaded nor encrypted (no etcd key exists). Node pools' archive paths: in the
deployment's node-files bucket, as the run renders them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from clm.config.local import LocalSource
from clm.render.inputs import RenderInputs
from clm.render.node_files import PlannedFiles
from clm.render.renderer import Renderer
from clm.stacks.deploy import check, start
from clm.stacks.etcd import etcd_stack_spec
from tests.unit.test_cli_plan import CONFIG, KUBE1, REGISTRY_FILE, aws_state, deploy, plan
from tests.unit.test_etcd_stack import FILES, STACK
from tests.unit.test_stacks_support import Clients, clients, example_cluster, render, stacks_aws

__all__ = ["clients", "stacks_aws"]  # fixtures

BUCKET = "clm-node-files"
ETCD = "etcd-cluster-etcd"


@pytest.fixture
def etcd_config(tmp_path: Path) -> str:
    """examples/config with cluster/etcd/stack.yaml (the archive's path in a resource) and files.yaml (encrypted)."""
    config = tmp_path / "config"
    shutil.copytree(CONFIG, config)
    (config / "cluster" / "etcd").mkdir()
    (config / "cluster" / "etcd" / "stack.yaml").write_text(STACK)
    (config / "cluster" / "etcd" / "files.yaml").write_text(FILES)
    return str(config)


@pytest.fixture
def files_config(tmp_path: Path) -> str:
    """examples/config whose worker-default profile has files.yaml, its archive's path in the user data."""
    config = tmp_path / "files-config"
    shutil.copytree(CONFIG, config)
    profile = config / "cluster" / "node-pools" / "worker-default"
    (profile / "files.yaml").write_text("files:\n- path: /etc/node\n  data: {{ cluster.local_id | base64 }}\n")
    stack = profile / "stack.yaml"
    path_line = "#cloud-config\n# {{ values.S3GeneratedFilesPath }}\n"
    stack.write_text(stack.read_text().replace("#cloud-config\n", path_line))
    return str(config)


def deployment(clients: Clients, **outputs: str) -> None:
    """A stand-in for the deployed CLM stack `Clm` with the given outputs."""
    body = {
        "Resources": {"Nothing": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": {name: {"Value": value} for name, value in outputs.items()},
    }
    clients["cloudformation"].create_stack(StackName="Clm", TemplateBody=json.dumps(body))


def plan_json(config: str, *args: str) -> tuple[dict[str, Any], str]:
    """The JSON plan of kube-1 and what went to stderr."""
    result = plan("-o", "json", "plan", KUBE1, "--config", config, "--registry-file", REGISTRY_FILE, *args)
    return json.loads(result.stdout), result.stderr


def test_the_etcd_stack_comes_first_created_then_unchanged_and_the_plan_writes_nothing(
    clients, stacks_aws, etcd_config
):
    deployment(clients, ManageEtcdStack="true", NodeFilesBucketName=BUCKET)
    deploy(clients, render(example_cluster("kube-1")))
    before = aws_state(stacks_aws)

    data, stderr = plan_json(etcd_config)
    assert [(s["stack_name"], s["file"], s["action"]) for s in data["stacks"]] == [
        (ETCD, "cluster/etcd/stack.yaml", "create"),
        ("kube-1", "cluster/stack.yaml", "no change"),
        (
            "nodepool-default-worker-aws-123456789012-eu-central-1-kube-1",
            "cluster/node-pools/worker-default/stack.yaml",
            "no change",
        ),
    ]
    assert stderr == ""
    assert aws_state(stacks_aws) == before  # no stack, no object in any bucket: the archive's path only
    table = plan("plan", KUBE1, "--config", etcd_config, "--registry-file", REGISTRY_FILE).stdout
    assert f"stack {ETCD} (cluster/etcd/stack.yaml): create" in table
    assert table.index(ETCD) < table.index("stack kube-1 ")

    tree = LocalSource(Path(etcd_config)).fetch()
    rendered = Renderer(tree, RenderInputs(etcd_store=PlannedFiles(BUCKET))).render(example_cluster("kube-1"))
    spec = etcd_stack_spec(rendered)
    start(clients["cloudformation"], clients["s3"], spec)
    assert check(clients["cloudformation"], ETCD).state == "complete"
    data, _ = plan_json(etcd_config)
    etcd = data["stacks"][0]
    assert (etcd["stack_name"], etcd["action"], etcd["template_diff"], etcd["parameters"], etcd["tags"]) == (
        ETCD, "no change", "", [], []
    )  # fmt: skip
    assert etcd["sets_policy"] is False

    allow_all = {"Statement": [{"Effect": "Allow", "Action": "Update:*", "Principal": "*", "Resource": "*"}]}
    clients["cloudformation"].set_stack_policy(StackName=ETCD, StackPolicyBody=json.dumps(allow_all))
    etcd = plan_json(etcd_config)[0]["stacks"][0]  # as on a stack Zalando's CLM made: a run sets CLM's policy
    assert (etcd["action"], etcd["template_diff"], etcd["sets_policy"]) == ("update", "", True)
    table = plan("plan", KUBE1, "--config", etcd_config, "--registry-file", REGISTRY_FILE).stdout
    assert "stack policy: set to CLM's" in table
    clients["cloudformation"].set_stack_policy(StackName=ETCD, StackPolicyBody=spec.policy)

    Path(etcd_config, "cluster/etcd/stack.yaml").write_text(STACK.replace('"{{ values', '"v2 {{ values'))
    etcd = plan_json(etcd_config)[0]["stacks"][0]
    assert etcd["action"] == "update"
    assert f'-      GroupDescription: "s3://{BUCKET}/kube-1/etcd/' in etcd["template_diff"]

    # Another cluster's etcd stack of the account and region: the run changes nothing of it and stops (StackNotOwned).
    cfn = clients["cloudformation"]
    tags = [t for t in cfn.describe_stacks(StackName=ETCD)["Stacks"][0]["Tags"] if t["Key"] != "clm:etcd-cluster"]
    cfn.update_stack(StackName=ETCD, UsePreviousTemplate=True, Tags=[*tags, {"Key": "clm:etcd-cluster", "Value": "x"}])
    assert check(cfn, ETCD).state == "complete"
    etcd = plan_json(etcd_config)[0]["stacks"][0]
    assert (etcd["action"], etcd["template_diff"]) == ("attention", "")
    assert f"clm:etcd-cluster={KUBE1}" in etcd["problem"]
    table = plan("plan", KUBE1, "--config", etcd_config, "--registry-file", REGISTRY_FILE).stdout
    assert f"stack {ETCD} (cluster/etcd/stack.yaml): attention" in table and "CLM does not change it" in table


@pytest.mark.parametrize(
    ("outputs", "args", "shown", "warned"),
    [
        ({"ManageEtcdStack": "false", "NodeFilesBucketName": BUCKET}, [], False, ""),
        ({"ManageEtcdStack": "true", "NodeFilesBucketName": BUCKET}, ["--no-manage-etcd"], False, ""),
        (None, [], False, "stack Clm not found"),
        ({"NodeFilesBucketName": BUCKET}, [], False, "stack Clm has no output ManageEtcdStack"),
        (None, ["--manage-etcd"], True, ""),
        ({"ManageEtcdStack": "false", "NodeFilesBucketName": BUCKET}, ["--manage-etcd"], True, ""),
    ],
)
def test_only_when_the_deployment_or_the_flag_says_so(
    clients, stacks_aws, etcd_config, outputs: dict[str, str] | None, args: list[str], shown: bool, warned: str
):
    if outputs is not None:
        deployment(clients, **outputs)
    data, stderr = plan_json(etcd_config, *args)
    assert (data["stacks"][0]["stack_name"] == ETCD) is shown
    if warned:
        assert warned in stderr and "pass --manage-etcd or --no-manage-etcd" in stderr
    else:
        assert stderr == ""


def test_render_writes_the_etcd_stack_with_its_archive_path(clients, stacks_aws, etcd_config, tmp_path):
    args = ["-o", "json", "render", "all", "--config", etcd_config, "--registry-file", REGISTRY_FILE]
    plan(*args, "--manage-etcd", "--out", str(tmp_path / "undeployed"))  # no deployment: CLM's bucket
    clm_bucket = "s3://cluster-lifecycle-manager-123456789012-eu-central-1/kube-1/etcd/"
    assert clm_bucket in (tmp_path / "undeployed" / "kube-1" / "etcd-stack.yaml").read_text()
    deployment(clients, ManageEtcdStack="true", NodeFilesBucketName=BUCKET)
    out = tmp_path / "out"
    result = plan(*args, "--out", str(out))
    assert [(row["cluster"], row["etcd_stack"]) for row in json.loads(result.stdout)] == [
        ("aws:123456789012:eu-central-1:kube-1", "yes"),
        ("aws:123456789012:eu-central-1:kube-2", "yes"),
    ]
    assert f"s3://{BUCKET}/kube-1/etcd/" in (out / "kube-1" / "etcd-stack.yaml").read_text()
    without = plan(*args, "--no-manage-etcd", "--out", str(tmp_path / "without"))
    assert {row["etcd_stack"] for row in json.loads(without.stdout)} == {"no"}
    assert not (tmp_path / "without" / "kube-1" / "etcd-stack.yaml").exists()


def test_node_pools_archive_paths_are_in_the_deployments_node_files_bucket_as_the_run_renders_them(
    clients, stacks_aws, files_config
):
    tree = LocalSource(Path(files_config)).fetch()
    run_rendering = Renderer(tree, RenderInputs(files_store=PlannedFiles(BUCKET))).render(example_cluster("kube-1"))
    deploy(clients, run_rendering)
    pool = plan_json(files_config)[0]["stacks"][1]  # no deployment to read: CLM's bucket, unlike the run's
    user_data = "LaunchTemplate.LaunchTemplateData.UserData: changed"
    assert (pool["action"], pool["launch_changes"]) == ("update", [user_data])
    deployment(clients, ManageEtcdStack="false", NodeFilesBucketName=BUCKET)
    data, stderr = plan_json(files_config)
    assert [s["action"] for s in data["stacks"]] == ["no change", "no change"]
    assert stderr == ""


def test_the_renderings_warnings_are_shown_a_role_without_clms_boundary_named(clients, stacks_aws, tmp_path):
    """As `clm render` and the run's render step: a role the ClusterStackRole would refuse (clm.render.bounded_roles)
    is named with file and logical id, on stderr and in the JSON plan."""
    config = tmp_path / "config"
    shutil.copytree(CONFIG, config)
    stack = config / "cluster" / "stack.yaml"
    stack.write_text(
        stack.read_text().replace("\n      PermissionsBoundary: !ImportValue clm-cluster-role-boundary", "", 1)
    )
    data, stderr = plan_json(str(config))
    [warning] = data["warnings"]
    assert warning.startswith("cluster/stack.yaml: AWS::IAM::Role ") and "has no PermissionsBoundary" in warning
    assert "cluster/stack.yaml: AWS::IAM::Role" in stderr and "has no PermissionsBoundary" in stderr
