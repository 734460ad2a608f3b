"""A CodeCommit repository from a CloudFormation template (clm_sandbox.patches.cfn_codecommit): created in moto's
CodeCommit with the sandbox's file APIs, its attributes as AWS documents them, deleted with the stack."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError

from clm_sandbox.patches import cfn_codecommit

TEMPLATE = {
    "Resources": {
        "Repository": {
            "Type": "AWS::CodeCommit::Repository",
            "Properties": {"RepositoryName": "clm-config", "RepositoryDescription": "CLM configuration"},
        }
    },
    "Outputs": {
        "Id": {"Value": {"Ref": "Repository"}},
        "Name": {"Value": {"Fn::GetAtt": ["Repository", "Name"]}},
        "Arn": {"Value": {"Fn::GetAtt": ["Repository", "Arn"]}},
        "Clone": {"Value": {"Fn::GetAtt": ["Repository", "CloneUrlHttp"]}},
    },
}


def test_a_repository_from_a_template_exists_takes_commits_and_goes_with_the_stack(sandbox_aws: boto3.Session) -> None:
    cfn_codecommit.install()
    cfn_codecommit.install()
    cfn, codecommit = sandbox_aws.client("cloudformation"), sandbox_aws.client("codecommit")
    cfn.create_stack(StackName="repo", TemplateBody=json.dumps(TEMPLATE))
    outputs = {o["OutputKey"]: o["OutputValue"] for o in cfn.describe_stacks(StackName="repo")["Stacks"][0]["Outputs"]}
    metadata = codecommit.get_repository(repositoryName="clm-config")["repositoryMetadata"]
    assert outputs == {
        "Id": metadata["repositoryId"],
        "Name": "clm-config",
        "Arn": f"arn:aws:codecommit:{sandbox_aws.region_name}:123456789012:clm-config",
        "Clone": f"https://git-codecommit.{sandbox_aws.region_name}.amazonaws.com/v1/repos/clm-config",
    }
    assert metadata["repositoryDescription"] == "CLM configuration"
    commit = codecommit.put_file(
        repositoryName="clm-config", branchName="main", fileContent=b"a: 1\n", filePath="cluster/config-defaults.yaml"
    )["commitId"]
    assert codecommit.get_branch(repositoryName="clm-config", branchName="main")["branch"]["commitId"] == commit

    cfn.delete_stack(StackName="repo")
    with pytest.raises(ClientError, match="RepositoryDoesNotExist"):
        codecommit.get_repository(repositoryName="clm-config")
