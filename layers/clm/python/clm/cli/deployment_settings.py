"""What `clm plan` and `clm render` take from the deployment, so that they render as its run does.

Where the run's archives of node files go: the deployment's node-files bucket (the CLM stack's output
`NodeFilesBucketName`), or, when the deployment cannot be read, CLM's bucket of the cluster's account and region.
Whether it renders CLM's etcd stack (zalando-aws clusters whose configuration has cluster/etcd/stack.yaml): when the
deployment manages it (CDK context clm:manageEtcdStack, shown by the output `ManageEtcdStack`), or as
`--manage-etcd/--no-manage-etcd` says. Only the archives' paths are computed (PlannedFiles): nothing is encrypted or
uploaded. The deployment is read once, and only for a configuration with node files or an etcd stack.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from clm.cli.context import CliContext

if TYPE_CHECKING:
    from clm.model import Cluster
    from clm.render.inputs import RenderInputs
    from clm.render.node_files import PlannedFiles

MANAGE_OUTPUT = "ManageEtcdStack"
BUCKET_OUTPUT = "NodeFilesBucketName"
NODE_POOLS = "cluster/node-pools/"

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
class DeploymentSettings:
    """The deployment `stack` as one command renders with it; `manage_etcd`: the flag (None: the deployment's)."""

    cli: CliContext
    stack: str
    manage_etcd: bool | None
    _deployment: tuple[Mapping[str, str] | None, str] | None = field(default=None, init=False, repr=False)

    def inputs(self, inputs: RenderInputs, cluster: Cluster, files: Mapping[str, bytes]) -> tuple[RenderInputs, str]:
        """`inputs` with the stores a run would use for the cluster and a configuration of `files` (paths only), and
        a warning when whether the run renders the etcd stack is unknown (then it is left out)."""
        from clm.render.node_files import FILES, PlannedFiles

        node_files = any(path.startswith(NODE_POOLS) and path.endswith("/" + FILES) for path in files)
        bucket = self._node_files_bucket(cluster) if node_files else None
        etcd_store, warning = self._etcd_store(cluster, files)
        files_store = PlannedFiles(bucket) if bucket else None  # None: CLM's bucket (clm.render.node_files)
        return dataclasses.replace(inputs, files_store=files_store, etcd_store=etcd_store), warning

    def _etcd_store(self, cluster: Cluster, files: Mapping[str, bytes]) -> tuple[PlannedFiles | None, str]:
        from clm.render.etcd import ETCD_STACK, has_etcd_stack
        from clm.render.node_files import PlannedFiles, bucket_name

        if self.manage_etcd is False or not has_etcd_stack(cluster.provider, files):
            return None, ""
        outputs, error = self._outputs()
        if self.manage_etcd is None:
            setting = outputs.get(MANAGE_OUTPUT)
            if setting is None:
                why = error or f"stack {self.stack} has no output {MANAGE_OUTPUT} (deployed by an older CLM)"
                return None, (
                    f"the etcd stack ({ETCD_STACK}) is left out: whether the deployment manages it is unknown: "
                    f"{why}; pass --manage-etcd or --no-manage-etcd"
                )
            if setting != "true":
                return None, ""
        return PlannedFiles(self._node_files_bucket(cluster) or bucket_name(cluster.account_id, cluster.region)), ""

    def _node_files_bucket(self, cluster: Cluster) -> str | None:
        """The deployment's node-files bucket for a cluster of its own account and region; None (CLM's bucket of the
        cluster's account and region, the target stack's) for a cluster elsewhere."""
        from clm.workflow.placement import of_cluster

        bucket = self._outputs()[0].get(BUCKET_OUTPUT)
        return bucket if bucket and of_cluster(cluster) == self.cli.placement() else None

    def _outputs(self) -> tuple[Mapping[str, str], str]:
        """The deployment's outputs, or none and why they cannot be read (read once)."""
        if self._deployment is None:
            from botocore.exceptions import BotoCoreError, ClientError

            from clm.cli.deployment import stack_outputs
            from clm.cli.errors import CliError

            try:
                self._deployment = stack_outputs(self.cli.client("cloudformation"), self.stack), ""
            except (BotoCoreError, ClientError, CliError) as exc:
                self._deployment = None, str(exc)
        outputs, error = self._deployment
        return outputs or {}, error
