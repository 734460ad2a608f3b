"""The DynamoDB registry on in-process moto: round trips, status races, problems and the run lock."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from clm.errors import ClusterNotFound, LockHeld, RegistryError, ValidationError
from clm.model import Cluster, ClusterStatus, Problem
from clm.registry.dynamodb import MAX_ATTEMPTS, DynamoRegistry, create_table
from clm.registry.problems import PROBLEM_LIMIT, TOO_MANY_PROBLEMS

TABLE = "clm-registry"
CLUSTER_ID = "aws:123456789012:eu-central-1:kube-1"


def cluster_data(cluster_id: str = CLUSTER_ID, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": cluster_id,
        "alias": "kube-1",
        "local_id": "kube-1",
        "api_server_url": "https://kube-1.example.org",
        "channel": "stable",
        "config_items": {"cluster_update_block": "", "docker_registry": "registry.example.org", "weight": "1.5"},
        "criticality_level": 2,
        "environment": "production",
        "infrastructure_account": "aws:123456789012",
        "region": "eu-central-1",
        "provider": "zalando-aws",
        "lifecycle_status": "ready",
        "owner": "team-k8s",
        "node_pools": [
            {
                "name": "default-master",
                "profile": "master-default",
                "min_size": 1,
                "max_size": 2,
                "instance_type": "m5.large",
                "discount_strategy": "none",
                "config_items": {},
            },
            {
                "name": "default-worker",
                "profile": "worker-default",
                "min_size": 0,
                "max_size": 20,
                "instance_types": ["m5.xlarge", "m5a.xlarge"],
                "discount_strategy": "spot",
                "config_items": {"taints": "dedicated=worker:NoSchedule", "empty": ""},
            },
        ],
        "status": {
            "current_version": "c1#h1",
            "last_version": "c0#h0",
            "next_version": "",
            "problems": [
                {
                    "title": "boom",
                    "detail": "stack failed",
                    "status": 500,
                    "type": "https://cluster-lifecycle-manager.zalando.org/problems/general-error",
                    "instance": "",
                }
            ],
        },
    }
    data.update(changes)
    return data


def make_cluster(cluster_id: str = CLUSTER_ID, **changes: Any) -> Cluster:
    return Cluster.from_dict(cluster_data(cluster_id, **changes))


def running(*executions: str):
    return lambda holder: holder in executions


@pytest.fixture
def client(aws):
    client = aws.client("dynamodb")
    create_table(client, TABLE)
    return client


@pytest.fixture
def registry(client) -> DynamoRegistry:
    return DynamoRegistry(client, TABLE)


@pytest.fixture
def stored(registry) -> Cluster:
    cluster = make_cluster()
    registry.put(cluster)
    return cluster


def raw_item(client, cluster_id: str = CLUSTER_ID) -> dict[str, Any]:
    return client.get_item(TableName=TABLE, Key={"id": {"S": cluster_id}}, ConsistentRead=True)["Item"]


# --- table ----------------------------------------------------------------------------------------


def test_table_shape(client):
    table = client.describe_table(TableName=TABLE)["Table"]
    assert table["TableStatus"] == "ACTIVE"
    assert table["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}


def test_create_table_again_keeps_the_table(client, registry, stored):
    create_table(client, TABLE)
    assert registry.get(CLUSTER_ID) == stored


# --- clusters -------------------------------------------------------------------------------------


def test_round_trip(registry):
    cluster = make_cluster()
    other = make_cluster("aws:123456789012:eu-central-1:kube-0", local_id="kube-0", status=None)
    registry.put(cluster)
    registry.put(other)
    assert registry.get(CLUSTER_ID) == cluster
    assert registry.get(other.id) == other
    assert registry.list_clusters() == [other, cluster]  # sorted by id
    assert registry.list_clusters_report() == ([other, cluster], [])
    registry.delete(CLUSTER_ID)
    with pytest.raises(ClusterNotFound):
        registry.get(CLUSTER_ID)
    assert registry.list_clusters() == [other]


def test_numbers_come_back_as_int(registry, stored):
    cluster = registry.get(CLUSTER_ID)
    assert type(cluster.criticality_level) is int
    assert type(cluster.node_pools[1].max_size) is int
    assert type(cluster.status.problems[0].status) is int


def test_item_shape(client, stored):
    item = raw_item(client)
    assert set(item) == {"id", "spec", "status", "revision"}
    assert item["revision"] == {"N": "0"}
    assert item["spec"]["M"]["node_pools"]["L"][0]["M"]["instance_type"] == {"S": "m5.large"}
    assert "status" not in item["spec"]["M"]


def test_put_keeps_status_revision_and_lock(client, registry, stored):
    registry.record_problem(CLUSTER_ID, Problem(title="new"))
    registry.acquire_lock(CLUSTER_ID, "exec-1", running())
    before = registry.get(CLUSTER_ID).status
    changed = make_cluster(alias="renamed", status={"current_version": "other"})
    changed.node_pools[1].max_size = 30
    registry.put(changed)
    after = registry.get(CLUSTER_ID)
    assert after.alias == "renamed"
    assert after.node_pools[1].max_size == 30
    assert after.status == before
    assert raw_item(client)["revision"] == {"N": "1"}
    assert registry.lock_holder(CLUSTER_ID) == "exec-1"


def test_put_refuses_invalid_cluster(registry):
    cluster = make_cluster()
    cluster.region = "nowhere"
    with pytest.raises(ValidationError, match="region"):
        registry.put(cluster)
    assert registry.list_clusters_report() == ([], [])


def test_put_refuses_empty_config_item_key(registry):
    cluster = make_cluster()
    cluster.node_pools[0].config_items[""] = "x"
    with pytest.raises(ValidationError, match=r"node_pools\[0\]\.config_items: config item names must not be empty"):
        registry.put(cluster)
    with pytest.raises(ClusterNotFound):
        registry.get(CLUSTER_ID)


def test_list_paginates(registry, client):
    big = "x" * 300_000  # four items of ~300 KB exceed a Scan page of 1 MB
    clusters = [make_cluster(f"c{i}", config_items={"blob": big}) for i in range(4)]
    for cluster in clusters:
        registry.put(cluster)
    assert "LastEvaluatedKey" in client.scan(TableName=TABLE)
    assert registry.list_clusters() == clusters


@pytest.mark.parametrize(
    ("spec_change", "status", "message"),
    [
        ({"region": {"S": "nowhere"}}, None, "region: 'nowhere' is not valid"),
        ({"criticality_level": {"N": "1.5"}}, None, "criticality_level: must be an integer, got 1.5"),
        ({"id": {"S": "someone-else"}}, None, "spec.id: 'someone-else' differs from the item's key"),
        ({"colour": {"S": "blue"}}, None, "colour: unknown field"),
        ({}, {"S": "broken"}, "status: not a map"),
        ({}, {"M": {"problems": {"L": [{"S": "boom"}]}}}, "status: 'str' object has no attribute 'get'"),
    ],
)
def test_invalid_item_is_reported_and_others_still_list(client, registry, stored, spec_change, status, message):
    bad_id = "aws:123456789012:eu-central-1:bad"
    good_item = raw_item(client)
    spec = {**good_item["spec"]["M"], "id": {"S": bad_id}, **spec_change}
    item = {"id": {"S": bad_id}, "spec": {"M": spec}, "revision": {"N": "0"}}
    if status is not None:
        item["status"] = status
    client.put_item(TableName=TABLE, Item=item)
    clusters, invalid = registry.list_clusters_report()
    assert clusters == [stored]
    assert registry.list_clusters() == [stored]
    assert [cluster_id for cluster_id, _ in invalid] == [bad_id]
    assert message in invalid[0][1]
    assert f"dynamodb:{TABLE}" in invalid[0][1]
    with pytest.raises(ValidationError, match="dynamodb:"):
        registry.get(bad_id)


def test_item_without_spec_is_reported(client, registry, stored):
    client.put_item(TableName=TABLE, Item={"id": {"S": "bare"}})
    assert registry.list_clusters_report() == (
        [stored],
        [("bare", f"dynamodb:{TABLE}: cluster bare: spec: missing or not a map")],
    )


def test_delete_missing_cluster(registry):
    with pytest.raises(ClusterNotFound):
        registry.delete("nope")


def test_missing_cluster_everywhere(registry):
    for call in (
        lambda: registry.get("nope"),
        lambda: registry.update_status("nope", lambda status: None),
        lambda: registry.record_problem("nope", Problem(title="x")),
        lambda: registry.start_update("nope", "v"),
        lambda: registry.record_success("nope", "v"),
        lambda: registry.record_decommissioned("nope"),
        lambda: registry.acquire_lock("nope", "exec-1", running()),
        lambda: registry.lock_holder("nope"),
    ):
        with pytest.raises(ClusterNotFound, match="cluster nope is not in the registry"):
            call()
    assert registry.release_lock("nope", "exec-1") is False


def test_other_dynamodb_errors_propagate(client):
    registry = DynamoRegistry(client, "no-such-table")
    for call in (
        registry.list_clusters,
        lambda: registry.get(CLUSTER_ID),
        lambda: registry.put(make_cluster()),
        lambda: registry.delete(CLUSTER_ID),
        lambda: registry.record_problem(CLUSTER_ID, Problem(title="x")),
        lambda: registry.acquire_lock(CLUSTER_ID, "exec-1", running()),
        lambda: registry.release_lock(CLUSTER_ID, "exec-1"),
    ):
        with pytest.raises(ClientError) as caught:
            call()
        assert caught.value.response["Error"]["Code"] == "ResourceNotFoundException"


# --- status ---------------------------------------------------------------------------------------


def test_update_status_bumps_revision(client, registry, stored):
    def change(status: ClusterStatus) -> None:
        status.next_version = "c2#h2"

    written = registry.update_status(CLUSTER_ID, change)
    assert written.next_version == "c2#h2"
    assert registry.get(CLUSTER_ID).status == written
    assert raw_item(client)["revision"] == {"N": "1"}
    registry.update_status(CLUSTER_ID, change)
    assert raw_item(client)["revision"] == {"N": "2"}


def test_update_status_of_item_without_revision(client, registry, stored):
    client.update_item(TableName=TABLE, Key={"id": {"S": CLUSTER_ID}}, UpdateExpression="REMOVE revision")
    registry.start_update(CLUSTER_ID, "c2#h2")
    assert registry.get(CLUSTER_ID).status.next_version == "c2#h2"
    assert raw_item(client)["revision"] == {"N": "1"}


def test_racing_writers_both_survive(registry, stored):
    calls = []

    def change(status: ClusterStatus) -> None:
        if not calls:  # writer B gets in between writer A's read and write, once
            registry.record_problem(CLUSTER_ID, Problem(title="from B"))
        calls.append(list(status.problems))
        status.next_version = "from A"

    written = registry.update_status(CLUSTER_ID, change)
    assert len(calls) == 2
    assert calls[1][-1] == Problem(title="from B")  # the retry saw B's write
    final = registry.get(CLUSTER_ID).status
    assert final == written
    assert final.next_version == "from A"
    assert final.problems == [*stored.status.problems, Problem(title="from B")]


def test_racing_problem_writers_both_survive(registry, stored):
    first = True

    def change(status: ClusterStatus) -> None:
        nonlocal first
        if first:
            first = False
            registry.record_problem(CLUSTER_ID, Problem(title="B"))
        status.problems.append(Problem(title="A"))

    registry.update_status(CLUSTER_ID, change)
    titles = [p.title for p in registry.get(CLUSTER_ID).status.problems]
    assert titles == ["boom", "B", "A"]


def test_writer_that_always_loses_gives_up(client, registry, stored):
    def change(status: ClusterStatus) -> None:
        registry.record_problem(CLUSTER_ID, Problem(title=f"B{len(status.problems)}"))
        status.next_version = "never"

    with pytest.raises(RegistryError, match=f"other writers won {MAX_ATTEMPTS} times"):
        registry.update_status(CLUSTER_ID, change)
    status = registry.get(CLUSTER_ID).status
    assert status.next_version == ""
    assert len(status.problems) == 1 + MAX_ATTEMPTS
    assert raw_item(client)["revision"] == {"N": str(MAX_ATTEMPTS)}


def test_record_problem_coalesces_and_limits(registry, stored):
    registry.record_problem(CLUSTER_ID, Problem(title="boom", detail="stack failed", status=500))
    assert len(registry.get(CLUSTER_ID).status.problems) == 1
    for i in range(30):
        registry.record_problem(CLUSTER_ID, Problem(title=f"p{i}"))
    problems = registry.get(CLUSTER_ID).status.problems
    assert len(problems) == PROBLEM_LIMIT
    assert problems[0] == TOO_MANY_PROBLEMS
    assert problems[-1] == Problem(title="p29")


def test_update_lifecycle(registry, stored):
    registry.start_update(CLUSTER_ID, "c2#h2")
    registry.record_problem(CLUSTER_ID, Problem(title="failed"))
    assert registry.get(CLUSTER_ID).status.next_version == "c2#h2"
    written = registry.record_success(CLUSTER_ID, "c2#h2")
    assert written == ClusterStatus(current_version="c2#h2", last_version="c1#h1", next_version="", problems=[])
    assert registry.get(CLUSTER_ID).status == written
    assert registry.record_success(CLUSTER_ID, "c2#h2") == written  # a retried succeed step keeps the last version


def test_record_decommissioned(registry, stored):
    written = registry.record_decommissioned(CLUSTER_ID)
    assert written == ClusterStatus(current_version="", last_version="c1#h1", next_version="", problems=[])
    cluster = registry.get(CLUSTER_ID)
    assert cluster.status == written
    assert cluster.lifecycle_status == "decommissioned"
    assert cluster.spec_dict() == make_cluster(lifecycle_status="decommissioned").spec_dict()


# --- lock -----------------------------------------------------------------------------------------


def test_acquire_and_release(client, registry, stored):
    assert registry.lock_holder(CLUSTER_ID) is None
    assert registry.acquire_lock(CLUSTER_ID, "exec-1", running()) is True
    assert registry.lock_holder(CLUSTER_ID) == "exec-1"
    lock = raw_item(client)["lock"]["M"]
    assert lock["execution"] == {"S": "exec-1"}
    assert lock["acquired_at"]["S"].endswith("+00:00")
    assert registry.release_lock(CLUSTER_ID, "exec-1") is True
    assert registry.lock_holder(CLUSTER_ID) is None
    assert registry.release_lock(CLUSTER_ID, "exec-1") is False


def test_acquire_is_reentrant(client, registry, stored):
    assert registry.acquire_lock(CLUSTER_ID, "exec-1", running()) is True
    first = raw_item(client)["lock"]
    assert registry.acquire_lock(CLUSTER_ID, "exec-1", running("exec-1")) is True
    assert raw_item(client)["lock"] == first


def test_lock_held_by_running_execution(registry, stored):
    registry.acquire_lock(CLUSTER_ID, "exec-1", running())
    asked = []

    def is_running(holder: str) -> bool:
        asked.append(holder)
        return True

    with pytest.raises(LockHeld) as caught:
        registry.acquire_lock(CLUSTER_ID, "exec-2", is_running)
    assert asked == ["exec-1"]
    assert (caught.value.cluster_id, caught.value.holder) == (CLUSTER_ID, "exec-1")
    assert registry.lock_holder(CLUSTER_ID) == "exec-1"


def test_take_over_lock_of_finished_execution(registry, stored):
    registry.acquire_lock(CLUSTER_ID, "exec-1", running())
    assert registry.acquire_lock(CLUSTER_ID, "exec-2", running()) == "exec-1"
    assert registry.lock_holder(CLUSTER_ID) == "exec-2"
    assert registry.release_lock(CLUSTER_ID, "exec-1") is False


def test_racing_takers_only_one_wins(registry, stored):
    registry.acquire_lock(CLUSTER_ID, "stale", running())

    def x_is_running(holder: str) -> bool:
        if holder == "stale":  # taker Y takes over while X decides
            assert registry.acquire_lock(CLUSTER_ID, "Y", running()) == "stale"
            return False
        return holder == "Y"

    with pytest.raises(LockHeld) as caught:
        registry.acquire_lock(CLUSTER_ID, "X", x_is_running)
    assert caught.value.holder == "Y"
    assert registry.lock_holder(CLUSTER_ID) == "Y"


def test_release_by_other_execution_is_a_no_op(registry, stored):
    registry.acquire_lock(CLUSTER_ID, "exec-1", running())
    assert registry.release_lock(CLUSTER_ID, "exec-2") is False
    assert registry.lock_holder(CLUSTER_ID) == "exec-1"


def test_status_writes_keep_the_lock(registry, stored):
    registry.acquire_lock(CLUSTER_ID, "exec-1", running())
    registry.record_success(CLUSTER_ID, "c2#h2")
    assert registry.lock_holder(CLUSTER_ID) == "exec-1"


def test_delete_refuses_while_locked(registry, stored):
    registry.acquire_lock(CLUSTER_ID, "exec-1", running())
    with pytest.raises(RegistryError, match="locked by execution exec-1") as caught:
        registry.delete(CLUSTER_ID)
    assert not isinstance(caught.value, ClusterNotFound)
    assert registry.get(CLUSTER_ID) == stored
    registry.delete(CLUSTER_ID, force=True)
    with pytest.raises(ClusterNotFound):
        registry.get(CLUSTER_ID)


def test_malformed_lock_is_named(client, registry, stored):
    client.update_item(
        TableName=TABLE,
        Key={"id": {"S": CLUSTER_ID}},
        UpdateExpression="SET #l = :l",
        ExpressionAttributeNames={"#l": "lock"},
        ExpressionAttributeValues={":l": {"S": "x"}},
    )
    with pytest.raises(RegistryError, match="malformed lock 'x'"):
        registry.lock_holder(CLUSTER_ID)
    with pytest.raises(RegistryError, match="malformed lock 'x'"):
        registry.acquire_lock(CLUSTER_ID, "exec-1", running())
