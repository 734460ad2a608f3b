"""The reconcile function may write the registry table's rollout items and no cluster's (the synthesized statement,
judged by the sandbox's evaluator with `dynamodb:LeadingKeys` as AWS fills it: the partition key of the one item a
call names). A reconcile bent to it could not rewrite a cluster's spec, status or lock."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from botocore.exceptions import ClientError

from clm.model import Cluster, Problem
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.registry.rollouts import RolloutStore
from clm.rollout.state import RolloutState
from tests.unit.test_infra import DEFAULTS, policy_statements, synthesized
from tests.unit.test_sandbox_iam_kms import session_allowed

TABLE = "clm-registry"
T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
CLUSTER = Cluster("aws:123456789012:eu-central-1:kube-1", "kube-1", "aws:123456789012", "eu-central-1", "zalando-aws")


@pytest.fixture(scope="module")
def rollout_write(tmp_path_factory) -> dict:
    raw = synthesized(DEFAULTS, tmp_path_factory.mktemp("cdk-rollout-iam"))[1]
    [write] = [s for s in policy_statements(raw, "ReconcileFunctionRole") if "dynamodb:PutItem" in s["Action"]]
    return write


def test_reconcile_writes_rollouts_and_is_refused_every_write_of_a_cluster(
    sandbox_aws: boto3.Session, rollout_write: dict
) -> None:
    admin = sandbox_aws.client("dynamodb")
    create_table(admin, TABLE)
    DynamoRegistry(admin, TABLE).put(CLUSTER)
    table = admin.describe_table(TableName=TABLE)["Table"]["TableArn"]
    reads = {"Action": ["dynamodb:GetItem", "dynamodb:Scan"], "Resource": table}
    written = {"Action": rollout_write["Action"], "Resource": table, "Condition": rollout_write["Condition"]}
    function = session_allowed(sandbox_aws, [reads, written]).client("dynamodb")
    store = RolloutStore(function, TABLE)
    store.start(RolloutState("v1", T0))
    assert store.admit("v1", [CLUSTER.id]) and store.get("v1").admitted == {CLUSTER.id}
    store.pause("arn:ops", "", T0)
    assert store.unpause()
    registry = DynamoRegistry(function, TABLE)
    attempts = {
        "put": lambda: registry.put(CLUSTER),
        "problem": lambda: registry.record_problem(CLUSTER.id, Problem(title="forged")),
        "delete": lambda: function.delete_item(TableName=TABLE, Key={"id": {"S": CLUSTER.id}}),
        "lock": lambda: registry.acquire_lock(CLUSTER.id, "arn:forged", lambda _: False),
    }
    for name, attempt in attempts.items():
        with pytest.raises(ClientError) as refused:
            attempt()
        assert refused.value.response["Error"]["Code"] == "AccessDeniedException", name
    assert DynamoRegistry(admin, TABLE).get(CLUSTER.id) == CLUSTER
