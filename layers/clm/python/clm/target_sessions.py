"""AWS clients in a cluster's target (account and region), from a session of the target role there: kept by the warm
container, renewed before they expire, and checked to be in the target's account (CLM's VerifyAccount)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clm.targets import DEPLOY_HINT, Target, TargetPolicy, TargetRefused

# Seconds before a session expires that a new one is assumed: more than a kept Kubernetes client lives
# (clm.kube.connections.MAX_AGE), so that the EKS tokens it makes from its session stay signed by live credentials.
RENEW_BEFORE = 900.0
DURATION = 3600  # seconds a session lasts (the role's default maximum)
DENIED = ("AccessDenied", "AccessDeniedException")


@dataclass(frozen=True)
class _Kept:
    session: Any  # boto3.Session
    expires: float
    clients: dict[str, Any]


class TargetSessions:
    """Clients per target, made from `sts` (the hub's own STS client) assuming the role `policy` names there."""

    def __init__(self, policy: TargetPolicy, sts: Any, clock: Callable[[], float] = time.time) -> None:
        self._policy = policy
        self._sts = sts
        self._clock = clock
        self._kept: dict[Target, _Kept] = {}
        self._lock = threading.Lock()

    def client(self, service: str, cluster_id: str, target: Target) -> Any:
        """A client of `service` in `target` for `cluster_id`'s step; TargetRefused (naming the account, the role
        and the fix) when the deployment may not reach it, the role cannot be assumed, or it lands elsewhere."""
        with self._lock:
            kept = self._current(cluster_id, target)
            if service not in kept.clients:
                kept.clients[service] = kept.session.client(service, region_name=target.region)
            return kept.clients[service]

    def session(self, cluster_id: str, target: Target) -> Any:
        """The boto3 session in `target` (valid for RENEW_BEFORE seconds at least); refusals as `client`'s."""
        with self._lock:
            return self._current(cluster_id, target).session

    def _current(self, cluster_id: str, target: Target) -> _Kept:
        why = self._policy.refusal(target)
        if why:
            raise TargetRefused(cluster_id, target, why)
        kept = self._kept.get(target)
        if kept is None or kept.expires - self._clock() < RENEW_BEFORE:
            kept = self._kept[target] = self._assume(cluster_id, target)
        return kept

    def _assume(self, cluster_id: str, target: Target) -> _Kept:
        from botocore.exceptions import ClientError

        role = self._policy.role_arn(target, self._sts.meta.partition)
        try:
            answer = self._sts.assume_role(RoleArn=role, RoleSessionName=_session_name(), DurationSeconds=DURATION)
        except ClientError as exc:
            if exc.response["Error"]["Code"] not in DENIED:
                raise
            raise TargetRefused(
                cluster_id, target, f"the hub cannot assume {role} (AccessDenied): {DEPLOY_HINT}"
            ) from None
        credentials = answer["Credentials"]
        session = _session(credentials, target.region)
        landed = session.client("sts").get_caller_identity()["Account"]
        if landed != target.account:
            raise TargetRefused(
                cluster_id, target, f"role {role} lands in account {landed}, not the cluster's (CLM's VerifyAccount)"
            )
        return _Kept(session, credentials["Expiration"].timestamp(), {})


def _session(credentials: dict[str, Any], region: str) -> Any:
    """A boto3 session of `credentials` in `region`, its service models the container's (clm.aws.session)."""
    from clm.aws import session

    return session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=region,
    )


def _session_name() -> str:
    """`clm-<function>` (the Lambda function's name, else `cli`), as CloudTrail shows who acted."""
    return f"clm-{os.environ.get('AWS_LAMBDA_FUNCTION_NAME', 'cli')}"[:64]
