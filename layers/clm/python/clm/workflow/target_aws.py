"""AWS where a step's cluster lives (its target): the hub's own clients and settings in the hub's account and
region, else a session of the function's target role there and the target stack's names (docs/fleet.md)."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clm import aws
from clm.target_sessions import TargetSessions
from clm.targets import Target, TargetPolicy, TargetRefused
from clm.workflow import placement

STACK_ROLE_ENV = "CLM_CLOUDFORMATION_ROLE_ARN"  # the hub's own ClusterStackRole
NODE_FILES_BUCKET_ENV = "CLM_NODE_FILES_BUCKET"  # the hub's own node-files bucket


@dataclass(frozen=True)
class TargetAws:
    """AWS for `cluster_id`'s step in `target` (None: the hub's own account and region, not asked); `home`: the target
    is the hub's own."""

    cluster_id: str
    target: Target | None
    home: bool

    def client(self, service: str) -> Any:
        """A client of `service` in the target (TargetRefused when the hub may not or cannot act there)."""
        if self.home:
            return aws.client(service)
        return _sessions().client(service, self.cluster_id, self._elsewhere)

    def session(self) -> Any:
        """A boto3 session in the target (of the hub's own credentials at home)."""
        return aws.session() if self.home else _sessions().session(self.cluster_id, self._elsewhere)

    @property
    def stack_role(self) -> str | None:
        """The ClusterStackRole CloudFormation handles the cluster's stacks with."""
        if self.home:
            return os.environ.get(STACK_ROLE_ENV) or None
        return self._elsewhere.stack_role_arn(aws.client("sts").meta.partition)

    def templates_bucket(self, hub_artefacts: str) -> str:
        """Where templates over CloudFormation's inline limit go: the hub's artefact bucket, or the target stack's."""
        return hub_artefacts if self.home else self._elsewhere.templates_bucket

    @property
    def node_files_bucket(self) -> str | None:
        """Where node pools' archives go (nodes read them): the hub's setting, or the target stack's bucket."""
        return (os.environ.get(NODE_FILES_BUCKET_ENV) or None) if self.home else self._elsewhere.node_files_bucket

    @property
    def _elsewhere(self) -> Target:
        if self.target is None:
            raise ValueError("no target: the hub's own")
        return self.target


def of_event(event: Mapping[str, Any]) -> TargetAws:
    """The step's AWS: in the run's target (its payload's `target`, read from the registry by the run's begin), else
    (an execution started before targets existed) the hub's own account and region."""
    named = event.get("target")
    if not named:
        return TargetAws(str(event.get("cluster_id", "")), None, True)
    target = Target(str(named["account"]), str(named["region"]))
    return TargetAws(str(event.get("cluster_id", "")), target, target == placement.deployment())


def refusal(cluster_id: str, target: Target) -> str:
    """Why the hub may not or cannot act in `target` for the cluster (empty when it can): not an account the
    deployment may reach, or its target role cannot be assumed (or lands elsewhere). Assumes the role once."""
    if target == placement.deployment():
        return ""
    try:
        _sessions().session(cluster_id, target)
    except TargetRefused as refused:
        return str(refused)
    return ""


def _sessions() -> TargetSessions:
    policy = TargetPolicy.from_env(home=placement.deployment().account)
    return _kept_sessions(policy, aws.client("sts"))


@functools.cache
def _kept_sessions(policy: TargetPolicy, sts: Any) -> TargetSessions:
    """Sessions per policy and hub STS client (kept per credentials: the sandbox runs every function in one process,
    each with its own role)."""
    return TargetSessions(policy, sts)
