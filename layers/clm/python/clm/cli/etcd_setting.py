"""Whether `clm plan` and `clm render` include CLM's etcd stack, as the deployment's run would.

The run renders it for zalando-aws clusters whose configuration has cluster/etcd/stack.yaml when the deployment
manages it (CDK context clm:manageEtcdStack, which the CLM stack's output `ManageEtcdStack` shows);
`--manage-etcd/--no-manage-etcd` says so instead. Nothing is uploaded or encrypted here: only the etcd files'
archive path is computed (PlannedFiles), in the deployment's node-files bucket (output `NodeFilesBucketName`), or,
when the deployment cannot be read, in CLM's bucket of the cluster's account and region. The deployment is read
once, and only for a cluster that would have an etcd stack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from clm.cli.context import CliContext

if TYPE_CHECKING:
    from clm.model import Cluster
    from clm.render.node_files import PlannedFiles

MANAGE_OUTPUT = "ManageEtcdStack"
BUCKET_OUTPUT = "NodeFilesBucketName"

F = TypeVar("F", bound=Callable[..., Any])


def manage_etcd_option(function: F) -> F:
    """The `--manage-etcd/--no-manage-etcd` option; unset: as the deployment (--stack) says."""
    return click.option(
        "--manage-etcd/--no-manage-etcd",
        default=None,
        help="Include CLM's etcd stack (cluster/etcd/stack.yaml) or leave it out "
        "(default: as the deployment's clm:manageEtcdStack, read from the --stack outputs).",
    )(function)


@dataclass
class EtcdSetting:
    """The etcd setting of one command: `manage` (the flag, None: the deployment's) and the deployment `stack`."""

    cli: CliContext
    stack: str
    manage: bool | None
    _deployment: tuple[Mapping[str, str] | None, str] | None = field(default=None, init=False, repr=False)

    def store(self, cluster: Cluster, files: Mapping[str, bytes]) -> tuple[PlannedFiles | None, str]:
        """`(store, warning)`: the etcd store (the archive's path only, in the bucket a run would use) when a run
        renders the cluster's etcd stack from a configuration of `files`, None when it does not; `warning` when
        whether it does is unknown."""
        from clm.render.etcd import ETCD_STACK, has_etcd_stack
        from clm.render.node_files import PlannedFiles, bucket_name

        if self.manage is False or not has_etcd_stack(cluster.provider, files):
            return None, ""
        outputs, error = self._outputs()
        if self.manage is None:
            setting = (outputs or {}).get(MANAGE_OUTPUT)
            if setting is None:
                why = error or f"stack {self.stack} has no output {MANAGE_OUTPUT} (deployed by an older CLM)"
                return None, (
                    f"the etcd stack ({ETCD_STACK}) is left out: whether the deployment manages it is unknown: "
                    f"{why}; pass --manage-etcd or --no-manage-etcd"
                )
            if setting != "true":
                return None, ""
        bucket = (outputs or {}).get(BUCKET_OUTPUT) or bucket_name(cluster.account_id, cluster.region)
        return PlannedFiles(bucket), ""

    def _outputs(self) -> tuple[Mapping[str, str] | None, str]:
        """The deployment's outputs, or None and why they cannot be read (read once)."""
        if self._deployment is None:
            from botocore.exceptions import BotoCoreError, ClientError

            from clm.cli.deployment import stack_outputs
            from clm.cli.errors import CliError

            try:
                self._deployment = stack_outputs(self.cli.client("cloudformation"), self.stack), ""
            except (BotoCoreError, ClientError, CliError) as exc:
                self._deployment = None, str(exc)
        return self._deployment
