"""SSM parameters are judged on their ARN, as AWS judges them: what `cdk deploy`'s deploy role reads first (the
bootstrap version, /cdk-bootstrap/<qualifier>/version) is allowed by a statement on that parameter and no other."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.unit.test_sandbox_iam_kms import session_allowed

VERSION = "/cdk-bootstrap/hnb659fds/version"
ARN = "arn:aws:ssm:eu-central-1:123456789012:parameter"


def test_a_parameter_is_judged_on_its_arn_by_name_or_arn(sandbox_aws: boto3.Session) -> None:
    ssm = sandbox_aws.client("ssm")
    ssm.put_parameter(Name=VERSION, Value="21", Type="String")
    ssm.put_parameter(Name="/team-b/secret", Value="b", Type="String")
    statements = [{"Action": "ssm:GetParameter", "Resource": f"{ARN}/cdk-bootstrap/hnb659fds/*"}]
    role = session_allowed(sandbox_aws, statements).client("ssm")
    for name in (VERSION, f"{ARN}{VERSION}"):
        assert role.get_parameter(Name=name)["Parameter"]["Value"] == "21"
    with pytest.raises(ClientError) as refused:
        role.get_parameter(Name="/team-b/secret")
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    assert f"{ARN}/team-b/secret" in refused.value.response["Error"]["Message"]
