"""One hub, a fleet in three accounts and two regions, end to end on the sandbox with IAM enforced (issue 27): the hub
(`Clm` with clm:targetAccounts) in 123456789012/eu-central-1, `ClmTarget` deployed into 222222222222/eu-west-1 and
333333333333/eu-central-1 by each account's admin and into the hub's own account in eu-west-1, and a cluster in each
of the four places. Each is provisioned (its stacks made by its account's ClusterStackRole), rolled to a new AMI and
decommissioned by the same runs, every stack and instance in its own account and region and none elsewhere (listed
per account after each phase), with no call refused. As Zalando's CLM, which assumes its role in each cluster's
account (provisioner/clusterpy.go setupAWSAdapter) and checks where it landed (aws.go VerifyAccount)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from click.testing import CliRunner
from kubernetes import client as k8s
from kubernetes import config

from clm.cli.main import cli
from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm.targets import DEPLOY_HINT, Target
from clm_sandbox import accounts
from clm_sandbox.controlplane import ControlPlane
from clm_sandbox.deploy import deploy_assembly
from clm_sandbox.deploy.synth import Assembly, read_assembly, synthesize
from clm_sandbox.nodesim import NodeSimulator
from tests.endpoints import store_kube_secret
from tests.integration.deployment import (
    ALL_AT_ONCE,
    ROOT,
    Deployment,
    nodes_terminated,
    upload_new_ami,
    upload_rollout_policy,
)
from tests.unit.test_workflow_placement import elsewhere

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

HUB = Target(accounts.MANAGEMENT_ACCOUNT, "eu-central-1")
TARGETS = (Target("222222222222", "eu-west-1"), Target("333333333333", "eu-central-1"))
OWN_REGION = Target(HUB.account, "eu-west-1")  # the hub's own account, another region: a target stack there too
PLACES = (HUB, *TARGETS, OWN_REGION, Target("222222222222", "eu-central-1"), Target("333333333333", "eu-west-1"))
CONTEXT = {"clm:targetAccounts": ",".join(t.account for t in TARGETS), "clm:hub": f"{HUB.account}:{HUB.region}"}


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """The app synthesized with the targets' context (overrides conftest's: the hub may reach the targets)."""
    return synthesize(tmp_path_factory.mktemp("cdk-out-fleet"), "Clm", CONTEXT)


def _session(target: Target, sts: Any) -> boto3.Session:
    """A session of the account's admin in the target's region (clm_sandbox.accounts.admin_session)."""
    return accounts.admin_session(sts, target.account, target.region)


@pytest.fixture
def fleet(
    deployment: Deployment, assembly: Assembly, kube_api: k8s.ApiClient, control_plane: ControlPlane
) -> Iterator[list[tuple[Cluster, boto3.Session]]]:
    """The target stacks deployed and a cluster per account, each reachable through a kubeconfig secret of the hub's
    (kube-1 on the session's control plane, the others on a control plane each), each with its node simulator; yields
    each cluster and its account's admin session."""
    sts = deployment.session.client("sts")
    target_assembly = read_assembly(assembly.directory, "ClmTarget")
    base = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    with contextlib.ExitStack() as stack:
        clusters = []
        for number, target in enumerate((HUB, *TARGETS, OWN_REGION), 1):
            if target == HUB:
                session = _session(target, sts)
                cluster, plane, api = base, control_plane, kube_api
                items = {**base.config_items, "kube_auth_secret": "clm/kube-1"}
            else:
                session = _session(target, sts)
                deploy_assembly(target_assembly, session.client, target.region)
                cluster = _numbered(elsewhere(base, account=target.account, region=target.region), number)
                plane = stack.enter_context(ControlPlane())
                api = config.new_client_from_config(str(plane.kubeconfig_path))
                items = {**base.config_items, "kube_auth_secret": f"clm/{cluster.local_id}"}
                store_kube_secret(
                    deployment.session, items["kube_auth_secret"], plane.kubeconfig_path.read_text(), cluster.id
                )
            cluster = dataclasses.replace(cluster, config_items=items)
            stack.enter_context(
                NodeSimulator(api, session, cluster.id, boot_delay=1.0, pod_ready_delay=0.2, time_scale=0.1)
            )
            clusters.append((cluster, session))
        yield clusters


def _numbered(cluster: Cluster, number: int) -> Cluster:
    """`cluster` named kube-<number>-<region> (its local id and id), unique across the fleet."""
    local_id = f"kube-{number}-{cluster.region}"
    return dataclasses.replace(cluster, id=cluster.id.rsplit(":", 1)[0] + f":{local_id}", local_id=local_id)


def where_things_are(deployment: Deployment) -> dict[Target, dict[str, Any]]:
    """Per account and region: the stacks (CLM's own aside) and running instances."""
    sts = deployment.session.client("sts")
    found = {}
    for place in PLACES:
        session = _session(place, sts)
        stacks = {
            s["StackName"]
            for s in session.client("cloudformation").describe_stacks()["Stacks"]
            if s["StackName"] not in {"Clm", "ClmTarget", "CDKToolkit"}
        }
        reservations = session.client("ec2").describe_instances(
            Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
        )["Reservations"]
        found[place] = {"stacks": stacks, "instances": {i["InstanceId"] for r in reservations for i in r["Instances"]}}
    return found


def clm_status(deployment: Deployment) -> list[dict[str, Any]]:
    """`clm status -o json` against the hub's registry."""
    table = deployment.outputs["RegistryTableName"]
    result = CliRunner().invoke(cli, ["--table", table, "-o", "json", "status"], catch_exceptions=True)
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


def _expected_stacks(cluster: Cluster) -> set[str]:
    return {cluster.local_id, f"nodepool-default-worker-{cluster.id.replace(':', '-')}"}


def _runs(deployment: Deployment, known: int, count: int) -> list[dict[str, Any]]:
    """The runs after the first `known` once none runs; each cluster's working run succeeded."""
    runs = deployment.settle(known)
    assert all(e["status"] == "SUCCEEDED" for e in runs), [(e["status"], e.get("error"), e.get("cause")) for e in runs]
    working = [e for e in runs if json.loads(e["output"])["plan"]["action"] != "skip"]
    assert len(working) == count, [json.loads(e["output"])["plan"] for e in runs]
    return working


def test_one_hub_provisions_rolls_and_decommissions_four_clusters_in_three_accounts_and_two_regions(
    deployment: Deployment, fleet: list[tuple[Cluster, boto3.Session]]
) -> None:
    clusters = [cluster for cluster, _ in fleet]
    upload_rollout_policy(deployment, ALL_AT_ONCE)  # the four roll together (waves: test_fleet_rollout)
    for cluster in clusters:
        deployment.registry.put(cluster)
    runs = _runs(deployment, 0, 4)
    targets = {json.loads(e["output"])["plan"]["cluster_id"]: json.loads(e["output"])["plan"]["target"] for e in runs}
    assert targets == {c.id: {"account": c.account_id, "region": c.region} for c in clusters}
    placed = where_things_are(deployment)
    by_place = {Target(c.account_id, c.region): c for c in clusters}
    assert {place: found["stacks"] for place, found in placed.items()} == {
        place: _expected_stacks(by_place[place]) if place in by_place else set() for place in PLACES
    }
    assert {place: len(found["instances"]) for place, found in placed.items()} == {
        place: 3 if place in by_place else 0 for place in PLACES
    }
    assert {(row["id"], row["account"], row["region"], row["lifecycle"]) for row in clm_status(deployment)} == {
        (c.id, c.account_id, c.region, "ready") for c in clusters
    }  # one fleet view: `clm status` lists the four with their accounts and regions
    for cluster, session in fleet[1:]:  # each target's stacks handled by its own ClusterStackRole
        role = Target(cluster.account_id, cluster.region).stack_role_arn()
        described = session.client("cloudformation").describe_stacks(StackName=cluster.local_id)["Stacks"][0]
        assert described["RoleARN"] == role

    known = len(deployment.executions(deployment.provision))
    upload_new_ami(deployment)  # reconcile starts a run per cluster: each rolls its nodes in its own account
    _runs(deployment, known, 4)
    rolled = where_things_are(deployment)
    for place, cluster in by_place.items():
        assert len(rolled[place]["instances"]) == 3 and not rolled[place]["instances"] & placed[place]["instances"]
        assert rolled[place]["stacks"] == _expected_stacks(cluster)
    assert nodes_terminated(deployment.roll_states()) == 12

    known = len(deployment.executions(deployment.provision))
    followed = clusters[1]  # `clm decommission --follow` of a cluster in another account: the hub's executions show it
    table = deployment.outputs["RegistryTableName"]
    result = CliRunner().invoke(
        cli, ["--table", table, "decommission", followed.id, "--yes", "--follow"], catch_exceptions=True
    )
    assert result.exit_code == 0, (result.output, result.exception)
    assert f"[decommission] Stack {followed.local_id}: DELETE_COMPLETE" in result.output
    for cluster in clusters:
        if cluster != followed:
            deployment.registry.put(dataclasses.replace(cluster, lifecycle_status="decommission-requested"))
    _runs(deployment, known, 4)
    gone = where_things_are(deployment)
    assert {place: found["stacks"] for place, found in gone.items()} == {place: set() for place in PLACES}
    assert {c.id: deployment.registry.get(c.id).lifecycle_status for c in clusters} == dict.fromkeys(
        (c.id for c in clusters), "decommissioned"
    )


@pytest.mark.iam_refusals  # the run function's AssumeRole, refused by the target role's trust
def test_a_target_whose_trust_names_another_hub_is_refused_by_the_run_and_nothing_is_made_there(
    deployment: Deployment, assembly: Assembly
) -> None:
    """The target stack of 222222222222 trusts another hub (its roles' trust names account 999999999999): the run
    of a cluster there fails to assume the run target role (AccessDenied, judged by the sandbox on the trust policy)
    and ends with a problem naming the role and the fix; no lock, no stack, no rendering anywhere."""
    target = TARGETS[0]
    session = _session(target, deployment.session.client("sts"))
    deploy_assembly(read_assembly(assembly.directory, "ClmTarget"), session.client, target.region)
    iam = session.client("iam")
    for role in iam.list_roles()["Roles"]:
        if role["RoleName"].startswith(f"clm-target-{target.region}-") and not role["RoleName"].endswith("formation"):
            document = json.dumps(role["AssumeRolePolicyDocument"]).replace(HUB.account, "999999999999")
            iam.update_assume_role_policy(RoleName=role["RoleName"], PolicyDocument=document)
    base = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    cluster = elsewhere(base, account=target.account, region=target.region)
    before = where_things_are(deployment)
    deployment.registry.put(cluster)
    run = deployment.only_run(0)
    plan = json.loads(run["output"])["plan"]
    role = f"arn:aws:iam::{target.account}:role/clm-target-{target.region}-run"
    why = f"the hub cannot assume {role} (AccessDenied): {DEPLOY_HINT}"
    assert (plan["action"], plan["reason"]) == ("skip", f"target: cluster {cluster.id}: {target}: {why}")
    assert [p.title for p in deployment.registry.get(cluster.id).status.problems] == [plan["reason"]]
    assert deployment.registry.lock_holder(cluster.id) is None
    assert where_things_are(deployment) == before
    artefacts = deployment.session.client("s3").list_objects_v2(Bucket=deployment.outputs["ArtefactBucketName"])
    assert artefacts.get("KeyCount", 0) == 0
