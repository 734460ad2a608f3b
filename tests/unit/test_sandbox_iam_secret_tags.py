"""The kube and roll functions' IAM on cluster secrets (the synthesized statement, judged by the sandbox's evaluator
on moto's secrets with their tags, as AWS judges `secretsmanager:ResourceTag`): only a secret bound to a cluster by
the tag clm:cluster-id may be described or read; which cluster it names, the code checks (clm.kube.auth)."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.unit.test_infra import DEFAULTS, policy_statements, synthesized
from tests.unit.test_sandbox_iam_kms import session_allowed
from tests.unit.test_security_ingress_stacks import resolved


@pytest.fixture(scope="module")
def secret_statements(tmp_path_factory) -> list[dict]:
    raw = synthesized(DEFAULTS, tmp_path_factory.mktemp("cdk-secret-iam"))[1]
    statements = resolved(policy_statements(raw, "KubeFunctionRole"))
    chosen = [s for s in statements if "secretsmanager:GetSecretValue" in s["Action"]]
    return [{key: s[key] for key in ("Action", "Resource", "Condition")} for s in chosen]


def test_only_secrets_bound_to_a_cluster_are_readable(sandbox_aws: boto3.Session, secret_statements) -> None:
    secrets = sandbox_aws.client("secretsmanager")
    secrets.create_secret(Name="clm/kube-1", SecretString="k", Tags=[{"Key": "clm:cluster-id", "Value": "kube-1"}])
    secrets.create_secret(Name="clm/shared", SecretString="s", Tags=[{"Key": "team", "Value": "b"}])
    secrets.create_secret(Name="other/x", SecretString="x", Tags=[{"Key": "clm:cluster-id", "Value": "kube-1"}])
    function = session_allowed(sandbox_aws, secret_statements).client("secretsmanager")
    assert function.get_secret_value(SecretId="clm/kube-1")["SecretString"] == "k"
    assert function.describe_secret(SecretId="clm/kube-1")["Tags"] == [{"Key": "clm:cluster-id", "Value": "kube-1"}]
    for name in ("clm/shared", "other/x"):
        for call in (function.get_secret_value, function.describe_secret):
            with pytest.raises(ClientError) as refused:
                call(SecretId=name)
            assert refused.value.response["Error"]["Code"] == "AccessDeniedException", name
