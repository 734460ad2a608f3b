"""The run function's EKS grant (CLM's ZalandoEKSCreationHook reads the EKS cluster: clm.workflow.eks_hook), as
synthesized, judged by the sandbox's evaluator: it describes any EKS cluster of its account and region and may not
change one, list them, or describe one elsewhere. Which cluster it may use is the code's check (the cluster's
ownership tag), as a condition key cannot hold the cluster's id."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.endpoints import create_eks_cluster, self_signed
from tests.unit.test_infra import DEFAULTS, policy_statements, synthesized
from tests.unit.test_sandbox_iam_kms import session_allowed

ACCOUNT, REGION = "123456789012", "eu-central-1"


@pytest.fixture(scope="module")
def eks_grant(tmp_path_factory) -> dict:
    raw = synthesized(DEFAULTS, tmp_path_factory.mktemp("cdk-eks-iam"))[1]
    [grant] = [s for s in policy_statements(raw, "RunFunctionRole") if "eks:DescribeCluster" in s["Action"]]
    return grant


def test_the_run_function_describes_eks_clusters_and_changes_none(sandbox_aws: boto3.Session, eks_grant: dict) -> None:
    create_eks_cluster(sandbox_aws, "team-a", self_signed()[0])
    resource = eks_grant["Resource"]["Fn::Join"][1]
    assert resource[-1] == ":cluster/*"  # arn:<partition>:eks:<region>:<account>:cluster/*, in the stack's own
    allowed = {"Action": eks_grant["Action"], "Resource": f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/*"}
    eks = session_allowed(sandbox_aws, [allowed]).client("eks")
    assert eks.describe_cluster(name="team-a")["cluster"]["name"] == "team-a"
    for attempt in (
        eks.list_clusters,
        lambda: eks.delete_cluster(name="team-a"),
        lambda: eks.tag_resource(resourceArn=f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/team-a", tags={"x": "y"}),
    ):
        with pytest.raises(ClientError) as refused:
            attempt()
        assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
