"""The kube function reads the CloudWatch alarms a rollout's health gate names (its synthesized statement, judged by
the sandbox's evaluator as AWS judges DescribeAlarms: on each alarm the call names, `alarm:*` when it names none;
CloudWatch signs its requests as `monitoring`, its actions are `cloudwatch:`). It can read no more than that: no
alarm's change, no metric."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.unit.test_infra import DEFAULTS, policy_statements, synthesized
from tests.unit.test_sandbox_iam_kms import session_allowed


def alarm(cloudwatch, name: str) -> None:
    cloudwatch.put_metric_alarm(
        AlarmName=name, MetricName="Errors", Namespace="Team", Statistic="Sum", Period=60, EvaluationPeriods=1,
        Threshold=1.0, ComparisonOperator="GreaterThanThreshold",
    )  # fmt: skip


@pytest.fixture(scope="module")
def alarm_reads(tmp_path_factory) -> list[dict]:
    """The synthesized statement, its ARN in the sandbox's account and region."""
    raw = synthesized(DEFAULTS, tmp_path_factory.mktemp("cdk-alarm-iam"))[1]
    statements = [s for s in policy_statements(raw, "KubeFunctionRole") if "cloudwatch:DescribeAlarms" in s["Action"]]
    assert all(s["Action"] == "cloudwatch:DescribeAlarms" for s in statements)
    [statement] = statements
    parts = statement["Resource"]["Fn::Join"][1]  # arn:<partition>:cloudwatch:<region>:<account>:alarm:*
    assert parts[-1] == ":alarm:*" and "cloudwatch" in parts[2], parts
    return [{"Action": statement["Action"], "Resource": "arn:aws:cloudwatch:eu-central-1:123456789012:alarm:*"}]


def test_the_kube_function_reads_named_alarms_and_changes_none(sandbox_aws: boto3.Session, alarm_reads) -> None:
    alarm(sandbox_aws.client("cloudwatch"), "t0-slo")
    cloudwatch = session_allowed(sandbox_aws, alarm_reads).client("cloudwatch")
    assert [a["AlarmName"] for a in cloudwatch.describe_alarms(AlarmNames=["t0-slo"])["MetricAlarms"]] == ["t0-slo"]
    for attempt in (
        lambda: cloudwatch.set_alarm_state(AlarmName="t0-slo", StateValue="OK", StateReason="silenced"),
        lambda: cloudwatch.delete_alarms(AlarmNames=["t0-slo"]),
        lambda: cloudwatch.put_metric_data(Namespace="Team", MetricData=[{"MetricName": "Errors", "Value": 0}]),
    ):
        with pytest.raises(ClientError, match="AccessDenied"):
            attempt()


def test_describe_alarms_is_judged_on_each_alarm_it_names(sandbox_aws: boto3.Session) -> None:
    alarm(sandbox_aws.client("cloudwatch"), "team-slo")
    alarm(sandbox_aws.client("cloudwatch"), "other-slo")
    team = "arn:aws:cloudwatch:eu-central-1:123456789012:alarm:team-*"
    cloudwatch = session_allowed(sandbox_aws, [{"Action": "cloudwatch:DescribeAlarms", "Resource": team}]).client(
        "cloudwatch"
    )
    assert cloudwatch.describe_alarms(AlarmNames=["team-slo"])["MetricAlarms"]
    for names in (["team-slo", "other-slo"], None):
        with pytest.raises(ClientError, match="AccessDenied"):
            cloudwatch.describe_alarms(**({"AlarmNames": names} if names else {}))
