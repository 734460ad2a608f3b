"""The world of bench/target_sessions.py: in-process moto with the sandbox's patches and IAM judge (as
tests/unit/test_target_sessions.py), a hub in 123456789012/eu-central-1 whose stacks function runs as a session of
its role `Clm-StacksFunctionRole…`, and a target stack's role in 222222222222/eu-west-1 that trusts that role only
(infra.target_roles' trust: the hub's account, ArnLike aws:PrincipalArn); a cluster with its stack in each, both
in the hub's registry. And a meter of every AWS call and every client made in the process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
from botocore.client import BaseClient, ClientCreator
from moto import mock_aws

from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.targets import Target
from clm_sandbox import accounts
from clm_sandbox.iam import enforcement, principals
from clm_sandbox.moto_server import SERVER_CONFIG
from clm_sandbox.patches import apply_all

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
HUB = Target("123456789012", "eu-central-1")  # moto's default account: the sandbox's admin key acts there
TARGET = Target("222222222222", "eu-west-1")
FUNCTION_PREFIX = "Clm-StacksFunctionRole"  # CloudFormation's names of the hub stack's role (infra.target_roles)
FUNCTION_ROLE = f"{FUNCTION_PREFIX}BENCH-X1"
TARGET_ROLE = "clm-target-{region}-stacks"
TABLE = "clm-registry"
STACK_BODY = "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n"
LAMBDA_TRUST = {
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]
}
# The calls the benchmark's steps make (check_stack, pools: its stacks and Karpenter's instances) and the assumption
# of the target roles.
READS = ["cloudformation:DescribeStacks", "cloudformation:ListStacks", "ec2:DescribeInstances"]
FUNCTION_GRANTS = [
    {"Action": "sts:AssumeRole", "Resource": "arn:aws:iam::*:role/clm-target-*-stacks"},
    {"Action": READS, "Resource": "*"},
    {"Action": "dynamodb:GetItem", "Resource": f"arn:aws:dynamodb:{HUB.region}:{HUB.account}:table/{TABLE}"},
]
TARGET_GRANTS = [{"Action": READS, "Resource": "*"}]


@dataclass
class Meter:
    """AWS calls (`service:Operation`), clients made (by service) and boto3 sessions made while metering, with the
    seconds spent in each."""

    calls: Counter[str] = field(default_factory=Counter)
    clients: Counter[str] = field(default_factory=Counter)
    sessions: int = 0
    seconds: Counter[str] = field(default_factory=Counter)  # "calls", "clients", "sessions"

    def sts_calls(self) -> int:
        """The calls to STS (AssumeRole, GetCallerIdentity)."""
        return sum(n for name, n in self.calls.items() if name.startswith("sts:"))


@contextmanager
def metered() -> Iterator[Meter]:
    """Count every API call of any boto3 client, every client and every boto3 session made in this process, while
    inside."""
    meter = Meter()
    call, create, new_session = BaseClient._make_api_call, ClientCreator.create_client, boto3.Session.__init__

    @contextmanager
    def timed(what: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            meter.seconds[what] += time.perf_counter() - start

    def counted_call(client: Any, operation: str, params: Any) -> Any:
        meter.calls[f"{client.meta.service_model.service_name}:{operation}"] += 1
        with timed("calls"):
            return call(client, operation, params)

    def counted_create(creator: Any, service_name: str, *args: Any, **kwargs: Any) -> Any:
        meter.clients[service_name] += 1
        with timed("clients"):
            return create(creator, service_name, *args, **kwargs)

    def counted_session(session: Any, *args: Any, **kwargs: Any) -> None:
        meter.sessions += 1
        with timed("sessions"):
            new_session(session, *args, **kwargs)

    with (
        mock.patch.object(BaseClient, "_make_api_call", counted_call),
        mock.patch.object(ClientCreator, "create_client", counted_create),
        mock.patch.object(boto3.Session, "__init__", counted_session),
    ):
        yield meter


@dataclass(frozen=True)
class World:
    """The two clusters (home: the hub's account and region; target: 222222222222/eu-west-1) and their stacks."""

    home_cluster: str
    target_cluster: str

    def event(self, home: bool) -> dict[str, Any]:
        """A step's payload for the home or the target cluster, its target as the run's begin puts it."""
        cluster, where = (self.home_cluster, HUB) if home else (self.target_cluster, TARGET)
        return {
            "cluster_id": cluster,
            "stack_name": cluster.rsplit(":", 1)[-1],
            "target": {"account": where.account, "region": where.region},
            "decommission": False,
        }


@contextmanager
def world(judge: bool = True) -> Iterator[World]:
    """The sandbox's moto in this process, set up as the module says, the environment the stacks function has in
    Lambda (its role session's credentials), restored after; `judge`: the sandbox's IAM judges the role sessions."""
    apply_all()
    admin = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": HUB.region}
    with mock.patch.dict(os.environ, {**admin, "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}):
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
            os.environ.pop(name, None)
        with mock_aws(config=SERVER_CONFIG):
            enforcement.set_enforcing(judge)
            try:
                made = _set_up(boto3.Session(region_name=HUB.region))
                with mock.patch.dict(os.environ, _function_environment()):
                    yield made
            finally:
                enforcement.set_enforcing(None)


def _set_up(admin: boto3.Session) -> World:
    """The hub's registry, the function role, the target role and a cluster with its stack in each place."""
    template = next(c for c in load_clusters((EXAMPLES / "clusters.yaml").read_text()) if not c.is_new)
    dynamodb = admin.client("dynamodb")
    create_table(dynamodb, TABLE)
    registry = DynamoRegistry(dynamodb, TABLE)
    ids = []
    for where, local_id in ((HUB, "bench-home"), (TARGET, "bench-target")):
        cluster_id = f"aws:{where.account}:{where.region}:{local_id}"
        registry.put(
            dataclasses.replace(
                template,
                id=cluster_id,
                local_id=local_id,
                infrastructure_account=f"aws:{where.account}",
                region=where.region,
            )
        )
        with _acting_in(where.account):
            admin.client("cloudformation", region_name=where.region).create_stack(
                StackName=local_id, TemplateBody=STACK_BODY
            )
        ids.append(cluster_id)
    _role(admin, FUNCTION_ROLE, LAMBDA_TRUST, FUNCTION_GRANTS)
    trust = accounts.hub_role_trust(HUB.account, f"{FUNCTION_PREFIX}*")
    with _acting_in(TARGET.account):
        _role(admin, TARGET_ROLE.format(region=TARGET.region), trust, TARGET_GRANTS)
    return World(*ids)


@contextmanager
def _acting_in(account: str) -> Iterator[None]:
    """The sandbox's admin key acts in `account` (moto's MOTO_ACCOUNT_ID), while inside."""
    with mock.patch.dict(os.environ, {"MOTO_ACCOUNT_ID": account}):
        yield


def _role(admin: boto3.Session, name: str, trust: dict[str, Any], grants: list[dict[str, Any]]) -> None:
    iam = admin.client("iam")
    iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **grant} for grant in grants]}
    iam.put_role_policy(RoleName=name, PolicyName="bench", PolicyDocument=json.dumps(document))


def _function_environment() -> dict[str, str]:
    """What Lambda and the CDK app give the hub's stacks function: its role session's credentials, its region, the
    deployment's settings and its target role (infra.target_roles)."""
    role = f"arn:aws:iam::{HUB.account}:role/{FUNCTION_ROLE}"
    return {
        **principals.role_session(role, "Clm-StacksFunction-bench", HUB.region),
        "AWS_REGION": HUB.region,
        "AWS_DEFAULT_REGION": HUB.region,
        "AWS_LAMBDA_FUNCTION_NAME": "Clm-StacksFunction-bench",
        "CLM_REGISTRY_TABLE": TABLE,
        "CLM_CONFIG_SOURCE": "s3://clm-config/config/",
        "CLM_ARTEFACT_BUCKET": "clm-artefacts",
        "CLM_TARGET_ROLE": TARGET_ROLE,
        "CLM_TARGET_ACCOUNTS": TARGET.account,
    }
