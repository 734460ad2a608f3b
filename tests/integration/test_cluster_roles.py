"""A configuration writer cannot make CLM's ClusterStackRole an account admin: a cluster stack template that
(a) creates a role without CLM's permissions boundary, (b) creates a role outside CLM's path, (c) puts a policy on
CLM's own role, or (d) launches instances with another team's instance profile fails on IAM alone (the sandbox
judges CloudFormation's handler calls against the role, as AWS does), the run records a problem naming the refused
call, and no role in the account changed. The examples' own stacks (roles under the path, with the boundary)
provision in every other integration test."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.deployment import ROOT, Deployment, register_example_cluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.iam_refusals,  # the refusals of CloudFormation's handler calls are the point
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),
]

ACCOUNT = "123456789012"
FOREIGN = "team-data"  # another team's role and instance profile, made by the account's admin
TRUST_EC2 = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
ADMIN = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'
OUTSIDE_TRUST = """
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement:
        - Effect: Allow
          Principal: {AWS: "arn:aws:iam::999999999999:root"}
          Action: sts:AssumeRole"""
# The config writer's additions to the cluster stack, and the refused call the run's problem names.
ATTACKS = {
    "role-without-boundary": (
        f"""
  Escalation:
    Type: AWS::IAM::Role
    Properties:
      RoleName: kube-1-escalation
      Path: !ImportValue clm-cluster-role-path{OUTSIDE_TRUST}
      ManagedPolicyArns: ["arn:aws:iam::aws:policy/AdministratorAccess"]""",
        f"iam:CreateRole on resource: arn:aws:iam::{ACCOUNT}:role/clm-cluster/kube-1-escalation",
    ),
    "role-outside-the-path": (
        f"""
  Escalation:
    Type: AWS::IAM::Role
    Properties:
      RoleName: kube-1-escalation
      PermissionsBoundary: !ImportValue clm-cluster-role-boundary{OUTSIDE_TRUST}""",
        f"iam:CreateRole on resource: arn:aws:iam::{ACCOUNT}:role/kube-1-escalation",
    ),
    "policy-on-clms-role": (
        """
  Escalation:
    Type: AWS::IAM::Policy
    Properties:
      PolicyName: escalation
      PolicyDocument: ADMIN_POLICY
      Roles: [CLM_ROLE]""",
        f"on resource: arn:aws:iam::{ACCOUNT}:role/CLM_ROLE because",
    ),
    "foreign-instance-profile": (
        f"""
  Template:
    Type: AWS::EC2::LaunchTemplate
    Properties:
      LaunchTemplateData:
        ImageId: ami-0c1a7f89451184c8b
        InstanceType: t3.medium
        IamInstanceProfile: {{Name: {FOREIGN}}}
  Group:
    Type: AWS::AutoScaling::AutoScalingGroup
    Properties:
      MinSize: "1"
      MaxSize: "1"
      LaunchTemplate:
        LaunchTemplateId: !Ref Template
        Version: !GetAtt Template.LatestVersionNumber
      VPCZoneIdentifier: [!Ref "Subnet{{{{ az_id(zones[0]) | upper }}}}"]""",
        f"iam:PassRole on resource: arn:aws:iam::{ACCOUNT}:role/{FOREIGN}",
    ),
}


def roles(session: Any) -> dict[str, Any]:
    """Every role of the account with what gives it rights: trust, boundary, inline and attached policies."""
    iam = session.client("iam")
    found = {}
    for role in iam.list_roles()["Roles"]:
        name = role["RoleName"]
        inline = {p: iam.get_role_policy(RoleName=name, PolicyName=p)["PolicyDocument"] for p in _inline(iam, name)}
        attached = [p["PolicyArn"] for p in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]]
        boundary = iam.get_role(RoleName=name)["Role"].get("PermissionsBoundary")
        found[role["Arn"]] = (role["AssumeRolePolicyDocument"], boundary, inline, attached)
    profiles = iam.list_instance_profiles()["InstanceProfiles"]
    return found | {p["Arn"]: [r["Arn"] for r in p["Roles"]] for p in profiles}


def _inline(iam: Any, name: str) -> list[str]:
    return iam.list_role_policies(RoleName=name)["PolicyNames"]


def upload_attack(deployment: Deployment, addition: str) -> None:
    """The cluster stack of examples/config with the config writer's resources added."""
    body = (ROOT / "examples" / "config" / "cluster" / "stack.yaml").read_text()
    body = body.replace("\nOutputs:\n", addition + "\nOutputs:\n", 1)
    bucket = deployment.outputs["ConfigBucketName"]
    deployment.session.client("s3").put_object(Bucket=bucket, Key="config/cluster/stack.yaml", Body=body.encode())
    deployment.settle()  # the upload's reconcile: nothing is registered yet


def clms_role(deployment: Deployment) -> str:
    lambdas = deployment.session.client("lambda")
    [function] = [f for f in lambdas.list_functions()["Functions"] if "-StacksFunction" in f["FunctionName"]]
    return function["Role"].rsplit("/", 1)[-1]


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_config_writers_template_cannot_make_or_change_roles_beyond_clms_bounds(
    deployment: Deployment, attack: str
) -> None:
    iam = deployment.session.client("iam")
    iam.create_role(RoleName=FOREIGN, AssumeRolePolicyDocument=json.dumps(TRUST_EC2))
    iam.create_instance_profile(InstanceProfileName=FOREIGN)
    iam.add_role_to_instance_profile(InstanceProfileName=FOREIGN, RoleName=FOREIGN)
    addition, refused = ATTACKS[attack]
    clm_role = clms_role(deployment)
    upload_attack(deployment, addition.replace("ADMIN_POLICY", ADMIN).replace("CLM_ROLE", clm_role))
    before = roles(deployment.session)

    register_example_cluster(deployment)
    runs = deployment.settle(0)
    assert [run["status"] for run in runs] == ["FAILED"], [(run["status"], run.get("error")) for run in runs]
    problem = deployment.registry.get(deployment.cluster_id).status.problems[-1].title
    assert refused.replace("CLM_ROLE", clm_role) in problem, problem
    assert "is not authorized to perform" in problem and "AWSCloudFormation" in problem, problem
    assert roles(deployment.session) == before
