"""A Step Functions workflow from statemachines/<name>.asl.json, with ${Placeholders} filled by CDK.

A placeholder `${<Key>Function}` is the ARN of the function given under <Key>, `${<Key>StateMachine}` the ARN of
the child workflow given under <Key> (run with `states:startExecution.sync:2`); the workflow's role may invoke
exactly the functions and start exactly the children its definition uses, nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.context import ClmContext
from infra.nag import acknowledge, acknowledge_wildcards

STATEMACHINES = Path(__file__).resolve().parents[1] / "statemachines"
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
SYNC_RULE = "StepFunctionsGetEventsForStepFunctionsExecutionRule"


class WorkflowError(ValueError):
    """A definition file that is missing or uses a placeholder nobody provides."""


def definition_file(name: str, directory: Path = STATEMACHINES) -> Path:
    """Where the definition of workflow `name` lives."""
    return directory / f"{name}.asl.json"


class Workflow(Construct):
    """A Standard state machine logging errors (without execution data) to its log group, with X-Ray tracing."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        definition: Path,
        state_machine_name: str,
        context: ClmContext,
        functions: Mapping[str, lambda_.IFunction],
        children: Mapping[str, Workflow] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        try:
            text = definition.read_text()
        except OSError as exc:
            raise WorkflowError(f"{definition}: cannot read the state machine definition ({exc.strerror})") from None
        used = set(_PLACEHOLDER.findall(text))
        invokable = {f"{key}Function": function for key, function in functions.items()}
        startable = {f"{key}StateMachine": child for key, child in (children or {}).items()}
        self.state_machine_name = state_machine_name
        missing = used - invokable.keys() - startable.keys()
        if missing:
            known = ", ".join(sorted([*invokable, *startable])) or "none"
            raise WorkflowError(f"{definition}: no value for {', '.join(sorted(missing))} (known: {known})")
        self.log_group = logs.LogGroup(self, "Logs", removal_policy=RemovalPolicy.RETAIN)
        cfn_log_group: logs.CfnLogGroup = self.log_group.node.default_child
        cfn_log_group.retention_in_days = context.log_retention_days
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
            description=f"CLM workflow {state_machine_name}",
        )
        substitutions = {
            name: invokable[name].function_arn if name in invokable else startable[name].state_machine.state_machine_arn
            for name in sorted(used)
        }
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=state_machine_name,
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_file(str(definition)),
            definition_substitutions=substitutions,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ERROR, include_execution_data=False),
            tracing_enabled=True,
            role=self.role,
        )
        for name in sorted(used & invokable.keys()):
            invokable[name].grant_invoke(self.role)
            acknowledge_wildcards(
                self, [f"{invokable[name].function_arn}:*"], "CDK's invoke grant: the function and its versions"
            )
        for name in sorted(used & startable.keys()):
            self._allow_sync_start(startable[name])
        acknowledge_wildcards(
            self,
            ["*"],
            "log delivery (logs:*LogDelivery*) and X-Ray calls of Step Functions support no resource scoping",
        )
        acknowledge(self, "SF1", "errors only, on purpose: each step logs its own work with the cluster id")

    def _allow_sync_start(self, child: Workflow) -> None:
        """What `startExecution.sync:2` needs: start the child, watch and stop its executions, and the managed
        EventBridge rule Step Functions uses to learn that a child execution ended."""
        child.state_machine.grant_start_execution(self.role)
        stack = Stack.of(self)
        executions = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{child.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["states:DescribeExecution", "states:StopExecution"], resources=[executions])
        )
        rule = stack.format_arn(service="events", resource="rule", resource_name=SYNC_RULE)
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"], resources=[rule]
            )
        )
        acknowledge_wildcards(self, [executions], "the executions of the child workflow this one starts and awaits")
