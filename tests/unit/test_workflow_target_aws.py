"""A step acts where its run's cluster lives: the payload's `target` (read from the registry by begin) picks the hub's
own clients and settings in the hub's account and region, else a session of the function's target role there and the
target stack's names (in-process moto: the hub in 123456789012, eu-central-1; moto's STS gives a role of 222222222222
that account's own resources)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import boto3
import pytest

from clm.aws import forget_clients
from clm.workflow.target_aws import of_event, refusal

HUB = {"account": "123456789012", "region": "eu-central-1"}
TARGET = {"account": "222222222222", "region": "eu-west-1"}
CLUSTER = "aws:222222222222:eu-west-1:kube-2"


@pytest.fixture
def hub(aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> Iterator[boto3.Session]:
    """The stacks function's environment: its own ClusterStackRole and node-files bucket, its target role's name and
    the accounts it may reach."""
    for name, value in {
        "CLM_CLOUDFORMATION_ROLE_ARN": "arn:aws:iam::123456789012:role/Clm-ClusterStackRole-X",
        "CLM_NODE_FILES_BUCKET": "cluster-lifecycle-manager-123456789012-eu-central-1",
        "CLM_TARGET_ROLE": "clm-target-{region}-stacks",
        "CLM_TARGET_ACCOUNTS": "222222222222",
    }.items():
        monkeypatch.setenv(name, value)
    forget_clients()
    yield aws
    forget_clients()


def test_without_a_target_a_step_acts_as_the_hub_without_asking_sts(hub) -> None:
    """An execution started before targets existed: the hub's own clients and settings, no call to find out."""
    asked = []
    from clm.aws import client

    client("sts").meta.events.register("before-call.sts.*", lambda **_: asked.append(1))
    where = of_event({"cluster_id": CLUSTER})
    assert where.home and where.target is None
    assert where.client("cloudformation") is client("cloudformation")
    assert where.stack_role == "arn:aws:iam::123456789012:role/Clm-ClusterStackRole-X"
    assert where.node_files_bucket == "cluster-lifecycle-manager-123456789012-eu-central-1"
    assert where.templates_bucket("clm-artefacts") == "clm-artefacts"
    assert asked == []


def test_the_hubs_own_target_is_home(hub) -> None:
    where = of_event({"cluster_id": CLUSTER, "target": HUB})
    assert where.home
    assert refusal(CLUSTER, where.target) == ""


def test_another_target_gets_its_target_roles_session_and_the_target_stacks_names(hub) -> None:
    where = of_event({"cluster_id": CLUSTER, "target": TARGET})
    assert not where.home
    cloudformation = where.client("cloudformation")
    assert cloudformation.meta.region_name == "eu-west-1"
    identity = where.session().client("sts").get_caller_identity()
    assert identity["Account"] == "222222222222"
    assert ":assumed-role/clm-target-eu-west-1-stacks/clm-cli" in identity["Arn"]
    assert where.client("cloudformation") is cloudformation  # kept by the container
    assert where.stack_role == "arn:aws:iam::222222222222:role/clm-target-eu-west-1-cloudformation"
    assert where.node_files_bucket == "cluster-lifecycle-manager-222222222222-eu-west-1"
    assert where.templates_bucket("clm-artefacts") == "clm-templates-222222222222-eu-west-1"
    assert refusal(CLUSTER, where.target) == ""


def test_a_target_in_an_account_not_allowed_is_refused_without_assuming(hub) -> None:
    from clm.aws import client
    from clm.targets import TargetRefused

    assumed = []
    client("sts").meta.events.register("before-call.sts.AssumeRole", lambda **_: assumed.append(1))
    where = of_event({"cluster_id": CLUSTER, "target": {"account": "999999999999", "region": "eu-west-1"}})
    why = "account 999999999999 is not one this deployment may reach (clm:targetAccounts: 123456789012, 222222222222)"
    assert refusal(CLUSTER, where.target) == f"cluster {CLUSTER}: account 999999999999, region eu-west-1: {why}"
    with pytest.raises(TargetRefused, match=re.escape(why)):
        where.client("ec2")
    assert assumed == []
