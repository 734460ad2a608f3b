"""The policy `clm render --stack-policy` writes, on the deployed app: a cluster stack given resource types beyond
the ClusterStackRole's built-in rights (an S3 bucket with its policy and an SQS queue, as Zalando's stacks have)
fails on IAM alone (the sandbox judges CloudFormation's handler calls against the role, as AWS does), the run
records a problem naming the refused call; once the written policy is attached to the role (what `cdk deploy -c
clm:clusterStackPolicyArns=...` does), the next run creates them. A bucket policy on CLM's own configuration
bucket still fails: the role's denial holds whatever the written policy allows (its S3 grants are on "*")."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from clm.cli.main import cli
from clm.cli.stack_policy import needed_permissions, policy_template
from clm.config.local import LocalSource
from clm.registry.clusters_yaml import load_clusters
from clm.registry.rollouts import RolloutStore
from clm.render.cfn_yaml import load_template
from clm.render.renderer import Renderer
from clm.rollout.state import HALTED
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import ROOT, Deployment, register_example_cluster, the_run
from tests.integration.test_cluster_roles import upload_attack

pytestmark = [
    pytest.mark.integration,
    pytest.mark.iam_refusals,  # the role's refusal before the policy is the point
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),
]

BUCKET_POLICY = """
  BUCKETPolicy:
    Type: AWS::S3::BucketPolicy
    Properties:
      Bucket: BUCKET
      PolicyDocument:
        Version: "2012-10-17"
        Statement:
        - Effect: Allow
          Principal: {AWS: "arn:aws:iam::999999999999:root"}
          Action: s3:GetObject
          Resource: 'arn:aws:s3:::BUCKET/*'"""
ADDITION = """
  EtcdBackups:
    Type: AWS::S3::Bucket
    Properties:
      BucketName: kube-1-etcd-backups-123456789012
  NodeEvents:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: kube-1-node-events""" + BUCKET_POLICY.replace("BUCKETPolicy", "BackupsPolicy").replace(
    "BUCKET", "kube-1-etcd-backups-123456789012"
)


def written_policy(tmp_path) -> dict:
    """The policy document `clm render --stack-policy` writes for examples/config with ADDITION (its library)."""
    config = tmp_path / "config"
    for path in (ROOT / "examples" / "config").rglob("*"):
        if path.is_file():
            target = config / path.relative_to(ROOT / "examples" / "config")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    stack = config / "cluster" / "stack.yaml"
    stack.write_text(stack.read_text().replace("\nOutputs:\n", ADDITION + "\nOutputs:\n", 1))
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    rendered = Renderer(LocalSource(str(config)).fetch()).render(cluster)
    needed = needed_permissions([(cluster.region, s.file, s.template) for s in rendered.stacks])
    assert set(needed.actions) == {"AWS::S3::Bucket", "AWS::S3::BucketPolicy", "AWS::SQS::Queue"}
    [policy] = load_template(policy_template(needed, "kube-1"))["Resources"].values()  # within IAM's size quota
    return policy["Properties"]["PolicyDocument"]


def test_a_stack_beyond_the_roles_rights_fails_until_the_written_policy_is_attached(
    deployment: Deployment, nodes: NodeSimulator, tmp_path
) -> None:
    register_example_cluster(deployment)
    the_run(deployment.settle(known=0))
    known = len(deployment.executions(deployment.provision))

    upload_attack(deployment, ADDITION)  # the upload's reconcile starts provision: the cluster stack's update
    runs = deployment.settle(known)
    [failed] = [run for run in runs if run["status"] == "FAILED"]
    problem = deployment.registry.get(deployment.cluster_id).status.problems[-1].title
    assert failed["executionArn"] == deployment.registry.get(deployment.cluster_id).status.problems[-1].instance
    assert "is not authorized to perform: s3:CreateBucket" in problem or "sqs:CreateQueue" in problem, problem

    iam = deployment.session.client("iam")
    arn = iam.create_policy(PolicyName="clm-cluster-stacks", PolicyDocument=json.dumps(written_policy(tmp_path)))
    [role] = [r["RoleName"] for r in iam.list_roles()["Roles"] if "ClusterStackRole" in r["RoleName"]]
    iam.attach_role_policy(RoleName=role, PolicyArn=arn["Policy"]["Arn"])

    # The failure halted the new version's rollout: once the cause is fixed, the operator lets it go on.
    table_name = deployment.outputs["RegistryTableName"]
    store = RolloutStore(deployment.session.client("dynamodb"), table_name)
    [halted] = [rollout for rollout in store.list() if rollout.state == HALTED]
    known = len(deployment.executions(deployment.provision))
    table = ["--table", table_name]
    resumed = CliRunner().invoke(cli, [*table, "rollout", "resume", halted.version], catch_exceptions=False)
    assert resumed.exit_code == 0 and "reconcile started" in resumed.output, resumed.output
    [again] = [run for run in deployment.settle(known) if json.loads(run["output"])["plan"]["action"] != "skip"]
    assert again["status"] == "SUCCEEDED", again.get("error")
    assert "kube-1-etcd-backups-123456789012" in {
        b["Name"] for b in deployment.session.client("s3").list_buckets()["Buckets"]
    }
    assert deployment.session.client("sqs").get_queue_url(QueueName="kube-1-node-events")["QueueUrl"]
    assert deployment.registry.get(deployment.cluster_id).status.problems == []

    config_bucket = deployment.outputs["ConfigBucketName"]
    known = len(deployment.executions(deployment.provision))
    upload_attack(deployment, BUCKET_POLICY.replace("BUCKETPolicy", "Takeover").replace("BUCKET", config_bucket))
    assert [run["status"] for run in deployment.settle(known)] == ["FAILED"]
    problem = deployment.registry.get(deployment.cluster_id).status.problems[-1].title
    refused = f"s3:PutBucketPolicy on resource: arn:aws:s3:::{config_bucket} because an explicit deny"
    assert refused in problem, problem
