"""The deployed hub as the CLI sees it: its run function (the `--stack` stack's output RunFunctionName), the accounts
it may reach (that function's CLM_TARGET_* settings, judged by clm.targets.TargetPolicy as its runs judge them) and
its check of each target (the function's step check_targets, clm.workflow.target_check).

The hub's own account is the caller's (STS): the registry lives in the hub. Its settings are read only for a cluster
outside that account; when they cannot be read, only the hub's own account is taken as allowed, and a refusal says
why the settings are unknown.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from clm.cli.aws_errors import where
from clm.cli.context import CliContext
from clm.cli.deployment import stack_outputs
from clm.cli.errors import CliError, DeploymentNotFound

if TYPE_CHECKING:
    from clm.model import Cluster
    from clm.targets import Target, TargetPolicy

RUN_FUNCTION_OUTPUT = "RunFunctionName"
CHECK_STEP = "check_targets"
HUB_ONLY = "the hub acts only in the accounts its deployment may reach"


def run_function(cli: CliContext, stack: str) -> str:
    """The name of the hub's run function; DeploymentNotFound without the stack or its output RunFunctionName."""
    cloudformation = cli.client("cloudformation")
    name = stack_outputs(cloudformation, stack).get(RUN_FUNCTION_OUTPUT)
    if not name:
        why = f"stack {stack} has no output {RUN_FUNCTION_OUTPUT} (deployed by an older CLM: deploy it again)"
        raise DeploymentNotFound(why, stack, where(cloudformation))
    return name


@dataclass
class HubReach:
    """Which accounts the hub deployed as `stack` may reach, for the clusters a command would write."""

    cli: CliContext
    stack: str
    _home: str = field(default="", init=False, repr=False)
    _settings: tuple[TargetPolicy, str] | None = field(default=None, init=False, repr=False)

    def refusal(self, cluster: Cluster) -> str:
        """Why the hub may not act for `cluster` ("" when it may: the hub's own account, or one its settings allow,
        in any region), naming the cluster, its account and the setting."""
        from clm.workflow.placement import of_cluster

        if not self._home:
            self._home = self.cli.placement().account
        if cluster.account_id == self._home:
            return ""
        policy, unknown = self._policy()
        why = policy.refusal(of_cluster(cluster))
        if why and unknown:
            why += f"; the hub's settings could not be read ({unknown}): only its own account is known to be allowed"
        return f"cluster {cluster.id}: {why}" if why else ""

    def _policy(self) -> tuple[TargetPolicy, str]:
        """The hub's settings (read once), or its own account alone and why the settings cannot be read."""
        if self._settings is None:
            from botocore.exceptions import BotoCoreError, ClientError

            from clm.targets import TargetPolicy

            try:
                function = self.cli.client("lambda").get_function_configuration(
                    FunctionName=run_function(self.cli, self.stack)
                )
                environment, unknown = function.get("Environment", {}).get("Variables", {}), ""
            except (BotoCoreError, ClientError, CliError) as exc:
                environment, unknown = {}, str(exc)
            self._settings = TargetPolicy.from_env(environment, home=self._home), unknown
        return self._settings


def check_targets(cli: CliContext, stack: str, targets: list[Target]) -> tuple[str, list[dict[str, Any]]]:
    """The hub (`<account>:<region>`) and its check of each of `targets` (clm.workflow.target_check.TargetCheck as
    data), from its run function, at most MAX_TARGETS per invocation; CliError naming the function when it fails."""
    from clm.workflow.target_check import MAX_TARGETS

    name, hub, found = run_function(cli, stack), "", []
    lambda_ = cli.client("lambda")
    for start in range(0, len(targets), MAX_TARGETS):
        event = {"step": CHECK_STEP, "targets": [asdict(target) for target in targets[start : start + MAX_TARGETS]]}
        response = lambda_.invoke(FunctionName=name, Payload=json.dumps(event).encode())
        answer = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError"):
            raise CliError(_failed(name, answer if isinstance(answer, dict) else {}))
        hub = answer["hub"]
        found.extend(answer["targets"])
    return hub, found


def _failed(function: str, error: dict[str, Any]) -> str:
    """What to say when the run function failed `error` (its errorType and errorMessage)."""
    if error.get("errorType") == "UnknownStep":
        return (
            f"the hub's run function {function} has no step {CHECK_STEP}: the hub was deployed by an older CLM; "
            "deploy it again (cdk deploy Clm, docs/deploy.md)"
        )
    return f"the hub's run function {function} failed: {error.get('errorType')}: {error.get('errorMessage')}"
