"""The cluster registry in DynamoDB: one item per cluster, optimistic status writes and a run lock.

Item shape: `id` (partition key, S), `spec` (map: `Cluster.spec_dict()`), `status` (map:
`ClusterStatus.to_dict()`), `revision` (N, bumped by every status write, which is conditional on it),
`lock` (map `{execution, acquired_at}`, absent when unlocked), `parked` (map node -> `{token, execution,
until}`: the drains parked while the lock is held, clm.workflow.parking) and `woken_at` (when a run last
woke them). Spec writes never touch status, revision, lock or parking.
The boto3 client is passed in, so the logic runs the same on moto and on AWS.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from clm.errors import ClusterNotFound, LockHeld, RegistryError, ValidationError
from clm.model import Cluster, ClusterStatus, Problem
from clm.registry.item_size import spec_item_problem
from clm.registry.problems import add_problem
from clm.rollout.state import KEY_PREFIX as ROLLOUT_KEY_PREFIX
from clm.targets import Target

MAX_ATTEMPTS = 10
_NAMES = {
    "#id": "id",
    "#spec": "spec",
    "#status": "status",
    "#rev": "revision",
    "#lock": "lock",
    "#exec": "execution",
    "#lifecycle": "lifecycle_status",
    "#parked": "parked",
    "#woken": "woken_at",
    "#placed": "provisioned_in",
}
_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()


def create_table(client: Any, table_name: str) -> None:
    """Create the registry table (on demand, with a NEW_AND_OLD_IMAGES stream) and wait until ACTIVE.

    An existing table is left as it is.
    """
    try:
        client.create_table(
            TableName=table_name,
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceInUseException":
            raise
    client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 300})


class DynamoRegistry:
    """Clusters in a DynamoDB table, read and written through a boto3 DynamoDB client."""

    def __init__(self, client: Any, table_name: str):
        self._client = client
        self._table = table_name
        self._source = f"dynamodb:{table_name}"

    # --- clusters -------------------------------------------------------------------------------

    def list_clusters(self) -> list[Cluster]:
        """Every valid cluster, sorted by id; invalid items are skipped (see `list_clusters_report`)."""
        return self.list_clusters_report()[0]

    def list_clusters_report(self) -> tuple[list[Cluster], list[tuple[str, str]]]:
        """Valid clusters and `(id, error message)` of invalid items, both sorted by id (rollouts' items are not
        clusters: clm.registry.rollouts)."""
        clusters, invalid, _ = self.list_clusters_locked()
        return clusters, invalid

    def list_clusters_locked(self) -> tuple[list[Cluster], list[tuple[str, str]], dict[str, str]]:
        """As `list_clusters_report`, and the execution holding each locked cluster's lock, by cluster id (a
        malformed lock is left out: the run that meets it says so)."""
        clusters: list[Cluster] = []
        invalid: list[tuple[str, str]] = []
        locks: dict[str, str] = {}
        pages = self._client.get_paginator("scan").paginate(
            TableName=self._table,
            ConsistentRead=True,
            ProjectionExpression="#id, #spec, #status, #lock",
            FilterExpression="NOT begins_with(#id, :rollouts)",
            ExpressionAttributeNames=_names("#id, #spec, #status, #lock"),
            ExpressionAttributeValues={":rollouts": {"S": ROLLOUT_KEY_PREFIX}},
        )
        for page in pages:
            for item in page["Items"]:
                lock = _deserialize({"lock": item["lock"]})["lock"] if "lock" in item else None
                if isinstance(lock, dict) and isinstance(lock.get("execution"), str):
                    locks[item["id"]["S"]] = lock["execution"]
                try:
                    clusters.append(self._to_cluster(item))
                except ValidationError as exc:
                    invalid.append((item["id"]["S"], str(exc)))
        return sorted(clusters, key=lambda c: c.id), sorted(invalid), locks

    def get(self, cluster_id: str) -> Cluster:
        """The cluster with its status; ClusterNotFound when absent, ValidationError when invalid."""
        return self._to_cluster(self._get_item(cluster_id, "#id, #spec, #status"))

    def put(self, cluster: Cluster) -> None:
        """Write the cluster's spec, never touching the status, revision or lock of an existing item.

        A new item starts with the cluster's status. Raises ValidationError for data that could not
        be stored or read back, or an item over DynamoDB's size limit (clm.registry.item_size).
        """
        Cluster.from_dict(cluster.to_dict(), self._source)
        if too_large := spec_item_problem(cluster):
            raise ValidationError([too_large], cluster.id, self._source)
        spec = cluster.spec_dict()
        self._update(
            cluster.id,
            "SET #spec = :spec, #status = if_not_exists(#status, :status), #rev = if_not_exists(#rev, :zero)",
            values={":spec": spec, ":status": cluster.status.to_dict(), ":zero": 0},
        )

    def replace_config_item(self, cluster_id: str, item: str, old: str, new: str) -> bool:
        """Set the cluster's config item `item` to `new` if it still is `old` (False, nothing written, otherwise);
        the rest of the spec is not touched."""
        return self.replace_config_items(cluster_id, {item: old}, {item: new})

    def replace_config_items(self, cluster_id: str, old: dict[str, str | None], new: dict[str, str]) -> bool:
        """Set the config items `new` in one write if each still has its value in `old` (None: absent); False,
        nothing written, otherwise (or when the item is gone). The rest of the spec is not touched."""
        names = {f"#i{n}": item for n, item in enumerate(new)}
        values = {f":n{n}": value for n, value in enumerate(new.values())}
        conditions = ["attribute_exists(#id)"]
        for n, item in enumerate(new):
            if old.get(item) is None:
                conditions.append(f"attribute_not_exists(#spec.#items.#i{n})")
            else:
                conditions.append(f"#spec.#items.#i{n} = :o{n}")
                values[f":o{n}"] = old[item]
        try:
            self._update(
                cluster_id,
                "SET " + ", ".join(f"#spec.#items.#i{n} = :n{n}" for n in range(len(new))),
                " AND ".join(conditions),
                values=values,
                names={"#items": "config_items", **names},
            )
        except ClientError as exc:
            if _condition_failed(exc):
                return False
            raise
        return True

    def delete(self, cluster_id: str, force: bool = False) -> None:
        """Delete the cluster's item; refuse with RegistryError while its lock is held, unless `force`."""
        condition = "attribute_exists(#id)" + ("" if force else " AND attribute_not_exists(#lock)")
        try:
            self._client.delete_item(
                TableName=self._table,
                Key=_key(cluster_id),
                ConditionExpression=condition,
                ExpressionAttributeNames=_names(condition),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            current = _failed_item(exc, cluster_id)
            holder = _holder(current.get("lock"), cluster_id)
            raise RegistryError(
                f"cluster {cluster_id} is locked by execution {holder}; not deleted (use force to delete anyway)"
            ) from None

    # --- status ---------------------------------------------------------------------------------

    def update_status(self, cluster_id: str, change: Callable[[ClusterStatus], None]) -> ClusterStatus:
        """Apply `change` to a fresh copy of the stored status and write it if nobody wrote in between.

        On a lost race the status is read again and `change` applied again (so it must only edit the
        status it is given), at most MAX_ATTEMPTS times; then RegistryError. Returns the written status.
        """
        return self._write_status(cluster_id, change)

    def record_problem(self, cluster_id: str, problem: Problem) -> ClusterStatus:
        """Add a problem as CLM does: repeats coalesced, at most 25 kept."""

        def change(status: ClusterStatus) -> None:
            status.problems = add_problem(status.problems, problem)

        return self._write_status(cluster_id, change)

    def start_update(self, cluster_id: str, next_version: str) -> ClusterStatus:
        """Record the version an update is about to deploy (CLM's `next_version`)."""

        def change(status: ClusterStatus) -> None:
            status.next_version = next_version

        return self._write_status(cluster_id, change)

    def record_success(self, cluster_id: str, version: str, *, mark_ready: bool = False) -> ClusterStatus:
        """Record a successful update to `version`: the old current becomes last (not when it is `version`: a retried
        step), problems are cleared; `mark_ready` also sets the spec's lifecycle_status to ready, as CLM does after a
        first provision."""

        def change(status: ClusterStatus) -> None:
            if status.current_version != version:
                status.last_version, status.current_version = status.current_version, version
            status.next_version = ""
            status.problems = []

        if mark_ready:
            return self._write_status(cluster_id, change, ", #spec.#lifecycle = :lifecycle", {":lifecycle": "ready"})
        return self._write_status(cluster_id, change)

    def record_decommissioned(self, cluster_id: str) -> ClusterStatus:
        """Record a finished decommission as CLM does, setting the spec's lifecycle_status too."""

        def change(status: ClusterStatus) -> None:
            status.last_version, status.current_version = status.current_version, ""
            status.next_version = ""
            status.problems = []

        return self._write_status(
            cluster_id, change, ", #spec.#lifecycle = :lifecycle REMOVE #placed", {":lifecycle": "decommissioned"}
        )

    # --- where its resources are ----------------------------------------------------------------

    def record_placement(self, cluster_id: str, target: Target) -> None:
        """Remember where the cluster's resources are made: its first provision's target, kept until decommissioned
        (a later target does not replace it)."""
        placed = {"account": target.account, "region": target.region}
        self._update(
            cluster_id, "SET #placed = if_not_exists(#placed, :placed)", "attribute_exists(#id)", {":placed": placed}
        )

    def placement(self, cluster_id: str) -> Target | None:
        """Where the cluster's resources are (record_placement), None before its first provision."""
        placed = _deserialize(self._get_item(cluster_id, "#id, #placed")).get("provisioned_in")
        return None if placed is None else Target(str(placed["account"]), str(placed["region"]))

    # --- lock -----------------------------------------------------------------------------------

    def acquire_lock(self, cluster_id: str, execution: str, is_running: Callable[[str], bool]) -> bool | str:
        """Take the cluster's run lock for `execution`.

        Returns True when the lock was free or already held by `execution` (reentrant; `acquired_at`
        keeps the first acquisition), or the holder's name when the lock of an execution that
        `is_running` says has ended was taken over. Raises LockHeld when the holder still runs.
        """
        lock = {"execution": execution, "acquired_at": datetime.now(UTC).isoformat(timespec="seconds")}
        for _ in range(MAX_ATTEMPTS):
            current = self._lock_write(
                cluster_id,
                "SET #lock = if_not_exists(#lock, :lock)",
                "attribute_exists(#id) AND (attribute_not_exists(#lock) OR #lock.#exec = :holder)",
                lock,
                execution,
            )
            if current is None:
                return True
            holder = _holder(current.get("lock"), cluster_id)
            if is_running(holder):
                raise LockHeld(cluster_id, holder)
            # Take over; should another taker win in between, the next round sees the winner.
            if self._lock_write(cluster_id, "SET #lock = :lock", "#lock.#exec = :holder", lock, holder) is None:
                return holder
        raise RegistryError(f"cluster {cluster_id}: lock not taken after {MAX_ATTEMPTS} attempts")

    def release_lock(self, cluster_id: str, execution: str) -> bool:
        """Remove the lock (and the drains parked under it) if `execution` holds it; False (and nothing
        changed) otherwise."""
        try:
            self._update(cluster_id, "REMOVE #lock, #parked", "#lock.#exec = :holder", {":holder": execution})
        except ClientError as exc:
            if not _condition_failed(exc):
                raise
            return False
        return True

    def lock_holder(self, cluster_id: str) -> str | None:
        """The execution holding the cluster's lock, or None when unlocked."""
        lock = _deserialize(self._get_item(cluster_id, "#id, #lock")).get("lock")
        return None if lock is None else _holder(lock, cluster_id)

    # --- parked drains --------------------------------------------------------------------------

    def park(self, cluster_id: str, node: str, entry: dict[str, str]) -> str:
        """Keep a parked drain's `entry` under `node` (replacing an older one); returns `woken_at` ("" if never)."""
        self._update(cluster_id, "SET #parked = if_not_exists(#parked, :none)", "attribute_exists(#id)", {":none": {}})
        item = self._update(
            cluster_id, "SET #parked.#node = :entry", None, {":entry": entry}, {"#node": node}, ReturnValues="ALL_NEW"
        )["Attributes"]
        return str(_deserialize(item).get("woken_at") or "")

    def unpark(self, cluster_id: str, node: str, token: str) -> bool:
        """Forget the drain parked under `node` if it still holds `token`; False when it did not."""
        try:
            self._update(
                cluster_id,
                "REMOVE #parked.#node",
                "#parked.#node.#token = :token",
                {":token": token},
                {"#node": node, "#token": "token"},
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise
            return False
        return True

    def take_parked(self, cluster_id: str, woken_at: str) -> dict[str, dict[str, str]]:
        """Record a wake-up at `woken_at` and take every parked drain (node -> entry), in one write."""
        item = self._update(
            cluster_id,
            "SET #woken = :woken REMOVE #parked",
            "attribute_exists(#id)",
            {":woken": woken_at},
            ReturnValues="ALL_OLD",
        ).get("Attributes", {})
        return _deserialize(item).get("parked") or {}

    # --- internals ------------------------------------------------------------------------------

    def _write_status(
        self,
        cluster_id: str,
        change: Callable[[ClusterStatus], None],
        extra_update: str = "",
        extra_values: dict[str, Any] | None = None,
    ) -> ClusterStatus:
        """Read status and revision, apply `change`, write conditionally on the revision; retry."""
        for _ in range(MAX_ATTEMPTS):
            data = _deserialize(self._get_item(cluster_id, "#id, #status, #rev"))
            status = self._to_status(data.get("status"), cluster_id)
            change(status)
            revision = data.get("revision")
            condition = (
                "#rev = :rev" if revision is not None else "attribute_exists(#id) AND attribute_not_exists(#rev)"
            )
            values = {":status": status.to_dict(), ":next": (revision or 0) + 1, **(extra_values or {})}
            if revision is not None:
                values[":rev"] = revision
            try:
                self._update(cluster_id, "SET #status = :status, #rev = :next" + extra_update, condition, values)
            except ClientError as exc:
                if not _condition_failed(exc):
                    raise
                continue
            return status
        raise RegistryError(
            f"cluster {cluster_id}: status not written, other writers won {MAX_ATTEMPTS} times in a row"
        )

    def _lock_write(
        self, cluster_id: str, update: str, condition: str, lock: dict[str, str], holder: str
    ) -> dict[str, Any] | None:
        """A conditional lock write: None when it succeeded, else the item as the condition saw it."""
        try:
            self._update(
                cluster_id,
                update,
                condition,
                {":lock": lock, ":holder": holder},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            return _failed_item(exc, cluster_id)
        return None

    def _update(
        self,
        cluster_id: str,
        update: str,
        condition: str | None = None,
        values: dict[str, Any] | None = None,
        names: dict[str, str] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """UpdateItem with attribute names filled in from the expressions (and `names`, for keys of maps)."""
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "Key": _key(cluster_id),
            "UpdateExpression": update,
            "ExpressionAttributeNames": {**_names(update, condition or ""), **(names or {})},
            **extra,
        }
        if condition:
            kwargs["ConditionExpression"] = condition
        if values:
            kwargs["ExpressionAttributeValues"] = {k: _SERIALIZER.serialize(v) for k, v in values.items()}
        return self._client.update_item(**kwargs)

    def _get_item(self, cluster_id: str, projection: str) -> dict[str, Any]:
        """The raw item (strongly consistent), projected; ClusterNotFound when absent."""
        response = self._client.get_item(
            TableName=self._table,
            Key=_key(cluster_id),
            ConsistentRead=True,
            ProjectionExpression=projection,
            ExpressionAttributeNames=_names(projection),
        )
        if "Item" not in response:
            raise ClusterNotFound(cluster_id)
        return response["Item"]

    def _to_cluster(self, item: dict[str, Any]) -> Cluster:
        """Validate a raw item and build its Cluster, or raise ValidationError naming the culprits."""
        data = _deserialize(item)
        cluster_id = data["id"]
        spec = data.get("spec")
        if not isinstance(spec, dict):
            raise ValidationError(["spec: missing or not a map"], cluster_id, self._source)
        if spec.get("id") != cluster_id:
            raise ValidationError(
                [f"spec.id: {spec.get('id')!r} differs from the item's key"], cluster_id, self._source
            )
        cluster = Cluster.from_dict({**spec, "status": None}, self._source)
        cluster.status = self._to_status(data.get("status"), cluster_id)
        return cluster

    def _to_status(self, data: Any, cluster_id: str) -> ClusterStatus:
        """A stored status as ClusterStatus, or ValidationError; a missing status is empty."""
        if data is not None and not isinstance(data, dict):
            raise ValidationError(["status: not a map"], cluster_id, self._source)
        try:
            return ClusterStatus.from_dict(data)
        except (AttributeError, TypeError, ValueError) as exc:
            raise ValidationError([f"status: {exc}"], cluster_id, self._source) from None


def _key(cluster_id: str) -> dict[str, Any]:
    return {"id": {"S": cluster_id}}


def _names(*expressions: str) -> dict[str, str]:
    """ExpressionAttributeNames for the placeholders the expressions use (DynamoDB rejects unused ones)."""
    used = set(re.findall(r"#\w+", " ".join(expressions)))
    return {name: value for name, value in _NAMES.items() if name in used}


def _condition_failed(exc: ClientError) -> bool:
    return exc.response["Error"]["Code"] == "ConditionalCheckFailedException"


def _failed_item(exc: ClientError, cluster_id: str) -> dict[str, Any]:
    """The item a failed condition saw (ReturnValuesOnConditionCheckFailure=ALL_OLD), deserialized.

    Re-raises errors other than a failed condition; ClusterNotFound when there was no item.
    """
    if not _condition_failed(exc):
        raise exc
    if "Item" not in exc.response:
        raise ClusterNotFound(cluster_id) from None
    return _deserialize(exc.response["Item"])


def _holder(lock: Any, cluster_id: str) -> str:
    """The execution a stored lock names; RegistryError for a lock that names none."""
    if not isinstance(lock, dict) or not isinstance(lock.get("execution"), str):
        raise RegistryError(f"cluster {cluster_id}: malformed lock {lock!r}")
    return lock["execution"]


def _deserialize(item: dict[str, Any]) -> dict[str, Any]:
    """A raw item as plain Python values, numbers as int (float when not integral)."""
    return {name: _plain(_DESERIALIZER.deserialize(value)) for name, value in item.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
