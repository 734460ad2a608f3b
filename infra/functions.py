"""CLM's Lambda functions: one per folder under lambdas/, all with the `clm` layer, tracing and their own logs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.context import ClmContext
from infra.grantee import RoleGrants
from infra.layer import RUNTIME
from infra.nag import acknowledge, acknowledge_wildcards
from infra.network import FunctionNetwork, interface_grants

LAMBDAS = Path(__file__).resolve().parents[1] / "lambdas"
HANDLER = "handler.handler"
HUB_STACK_NAME = "Clm"  # app.py's hub stack: CloudFormation names its roles `Clm-<logical id>-<suffix>`
POWERTOOLS_ENVIRONMENT = {"POWERTOOLS_SERVICE_NAME": "clm", "POWERTOOLS_METRICS_NAMESPACE": "CLM"}


@dataclass(frozen=True)
class FunctionSpec:
    """A function's folder under lambdas/ and its sizing."""

    folder: str
    timeout_seconds: int
    memory_mb: int
    description: str


STEP_FUNCTIONS = (
    FunctionSpec("run", 60, 256, "CLM: begin and end a cluster run, render its configuration"),
    FunctionSpec("stacks", 60, 256, "CLM: create, update, check and delete the cluster's CloudFormation stacks"),
    FunctionSpec("kube", 120, 512, "CLM: apply the cluster's Kubernetes manifests and deletions"),
    FunctionSpec("roll", 120, 512, "CLM: roll node pools (plan, cordon, drain, terminate)"),
)
RECONCILE = FunctionSpec("reconcile", 120, 256, "CLM: start provision runs for the clusters that need one")
REGISTRY_EVENTS = FunctionSpec(
    "registry_events", 30, 256, "CLM: publish Cluster Changed events for registry spec changes"
)


class ClmFunction(RoleGrants, Construct):
    """A function (runtime infra.layer.RUNTIME) from lambdas/<folder> with the layer, X-Ray tracing, a log group with
    retention, and a role of its own that starts with nothing but writing its logs."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        spec: FunctionSpec,
        layer: lambda_.ILayerVersion,
        environment: Mapping[str, str],
        context: ClmContext,
        network: FunctionNetwork | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        code = LAMBDAS / spec.folder
        if not (code / "handler.py").is_file():
            raise FileNotFoundError(f"{code / 'handler.py'}: the handler of function {spec.folder} is missing")
        self.log_group = logs.LogGroup(self, "Logs", removal_policy=RemovalPolicy.RETAIN)
        cfn_log_group: logs.CfnLogGroup = self.log_group.node.default_child
        cfn_log_group.retention_in_days = context.log_retention_days  # any value CloudWatch accepts
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"CLM function {spec.folder}",
        )
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.X86_64,
            handler=HANDLER,
            code=lambda_.Code.from_asset(str(code), exclude=["__pycache__", "*.pyc"]),
            layers=[layer],
            environment={**environment, **POWERTOOLS_ENVIRONMENT},
            timeout=Duration.seconds(spec.timeout_seconds),
            memory_size=spec.memory_mb,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            role=self.role,
            description=spec.description,
            **(network.function_options() if network else {}),
        )
        acknowledge(
            self, "L1", "Python 3.13: supported as long as 3.14, and the layer is byte-compiled for it (infra.layer)"
        )
        acknowledge_wildcards(
            self, ["*"], "X-Ray's PutTraceSegments and PutTelemetryRecords support no resource scoping"
        )
        for grant in interface_grants(self) if network else []:
            self.allow(grant.actions, grant.resources, reason=grant.reason)


def function_id(folder: str) -> str:
    """The construct id of the function of lambdas/<folder> in the Clm stack (its role's logical id starts with it)."""
    return folder.title().replace("_", "") + "Function"


def role_name_prefix(folder: str) -> str:
    """The start of the name CloudFormation gives the role of lambdas/<folder>'s function in the hub stack."""
    return f"{HUB_STACK_NAME}-{function_id(folder)}Role"
