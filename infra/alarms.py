"""Alarms on CLM's workflows."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct


def executions_failed_alarm(scope: Construct, construct_id: str, state_machine: sfn.StateMachine) -> cloudwatch.Alarm:
    """In alarm while any execution failed in the last 5 minutes (each failure also records a problem on its
    cluster, see `clm registry show`)."""
    return state_machine.metric_failed(period=Duration.minutes(5), statistic="Sum").create_alarm(
        scope,
        construct_id,
        alarm_description=f"CLM: executions of {state_machine.state_machine_name} failed",
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
