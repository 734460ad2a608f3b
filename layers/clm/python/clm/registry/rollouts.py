"""Rollouts kept in the registry table, beside the clusters: an item per configuration version
(`rollout#v-<digest>`: RolloutState's fields as attributes) and the fleet's pause (`rollout#pause`).

Writers never overwrite each other: reconcile creates a rollout and records its waves' times and completion, a
failed run halts it, `clm rollout` resumes, aborts or pauses; each write is conditional on the state it changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from clm.errors import RegistryError
from clm.rollout.state import (
    ABORTED,
    COMPLETED,
    HALTED,
    KEY_PREFIX,
    PAUSE_KEY,
    ROLLING,
    Halt,
    RolloutState,
    rollout_key,
)
from clm.timestamps import format_time

_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()


def is_rollout_key(item_id: str) -> bool:
    """Whether a registry item's key is a rollout's (or the pause's), not a cluster's."""
    return item_id.startswith(KEY_PREFIX)


class RolloutStore:
    """The rollouts of a registry table, through a boto3 DynamoDB client."""

    def __init__(self, client: Any, table_name: str):
        self._client = client
        self._table = table_name

    def get(self, version: str) -> RolloutState | None:
        """The rollout of configuration `version`, or None when it never started."""
        item = self._client.get_item(TableName=self._table, Key=_key(rollout_key(version)), ConsistentRead=True)
        return _state(item["Item"]) if "Item" in item else None

    def list(self) -> list[RolloutState]:
        """Every rollout kept, the newest first."""
        pages = self._client.get_paginator("scan").paginate(
            TableName=self._table,
            ConsistentRead=True,
            FilterExpression="begins_with(#id, :prefix) AND attribute_exists(#version)",
            ExpressionAttributeNames={"#id": "id", "#version": "version"},
            ExpressionAttributeValues={":prefix": {"S": f"{KEY_PREFIX}v-"}},
        )
        states = [_state(item) for page in pages for item in page["Items"]]
        return sorted(states, key=lambda state: state.started_at, reverse=True)

    def start(self, state: RolloutState) -> RolloutState:
        """Keep a new rollout; the one kept already when another writer started it first."""
        try:
            self._client.put_item(
                TableName=self._table,
                Item=_item(state.key, state.to_dict() | ({"admitted": set(state.admitted)} if state.admitted else {})),
                ConditionExpression="attribute_not_exists(#id)",
                ExpressionAttributeNames={"#id": "id"},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            kept = self.get(state.version)
            if kept is None:
                raise RegistryError(f"rollout of {state.version}: neither started nor kept") from exc
            return kept
        return state

    def record_progress(self, state: RolloutState) -> None:
        """Keep the waves' times (and the completion) of a look; a halt or abort written meanwhile stays."""
        data = state.to_dict()
        update, condition = "SET #waves = :waves", "attribute_exists(#id)"
        names, values = {"#id": "id", "#waves": "waves"}, {":waves": data["waves"]}
        if state.state == COMPLETED:
            update += ", #state = :completed, #completed_at = :completed_at"
            condition += " AND #state = :rolling"
            names |= {"#state": "state", "#completed_at": "completed_at"}
            values |= {":completed": COMPLETED, ":completed_at": data["completed_at"], ":rolling": ROLLING}
        self._update(state.key, update, condition, names, values)

    def admit(self, version: str, cluster_ids: Iterable[str]) -> bool:
        """Let `cluster_ids` start the version of a rolling (or completed: its stragglers) rollout (their runs check
        it); False when it is halted or aborted (meanwhile): start none of them."""
        ids = sorted(set(cluster_ids))
        if not ids:
            return True
        return self._update(
            rollout_key(version),
            "ADD #admitted :ids",
            "attribute_exists(#id) AND (#state = :rolling OR #state = :completed)",
            {"#id": "id", "#state": "state", "#admitted": "admitted"},
            {":ids": set(ids), ":rolling": ROLLING, ":completed": COMPLETED},
        )

    def holds(self, cluster_id: str, version: str) -> str:
        """Why a run may not bring configuration `version` to the cluster now (empty: it may): a run's check."""
        state = self.get(version)
        if state is None:
            return f"waits for its wave: the rollout of configuration {version} has not started (reconcile starts it)"
        return state.holds(cluster_id, paused=self.pause_of() is not None)

    def halt(self, version: str, halt: Halt) -> bool:
        """Halt the rolling rollout of `version` for `halt`'s reason; True again for the same execution (a retried
        step), False when none rolls."""
        return self._update(
            rollout_key(version),
            "SET #state = :halted, #halt = :halt",
            "attribute_exists(#id) AND (#state = :rolling OR (#state = :halted AND #halt.#execution = :execution))",
            {"#id": "id", "#state": "state", "#halt": "halt", "#execution": "execution"},
            {":halted": HALTED, ":rolling": ROLLING, ":halt": halt.to_dict(), ":execution": halt.execution},
        )

    def resume(self, version: str) -> bool:
        """Let a halted rollout of `version` go on (its halt forgotten, its resumes counted); False when it is not
        halted."""
        return self._update(
            rollout_key(version),
            "SET #state = :rolling REMOVE #halt ADD #resumes :one",
            "attribute_exists(#id) AND #state = :halted",
            {"#id": "id", "#state": "state", "#halt": "halt", "#resumes": "resumes"},
            {":halted": HALTED, ":rolling": ROLLING, ":one": 1},
        )

    def abort(self, version: str) -> bool:
        """End the rollout of `version` for good (a newer version starts its own); False when it has ended."""
        return self._update(
            rollout_key(version),
            "SET #state = :aborted",
            "attribute_exists(#id) AND (#state = :rolling OR #state = :halted)",
            {"#id": "id", "#state": "state"},
            {":aborted": ABORTED, ":halted": HALTED, ":rolling": ROLLING},
        )

    def forget(self, version: str) -> None:
        """Remove the rollout of `version` (one no cluster reads any more)."""
        self._client.delete_item(TableName=self._table, Key=_key(rollout_key(version)))

    def pause(self, by: str, reason: str, at: datetime) -> None:
        """Pause every rollout: no cluster starts a rollout's version until `unpause`."""
        self._client.put_item(
            TableName=self._table,
            Item=_item(PAUSE_KEY, {"paused_at": format_time(at), "by": by, "reason": reason}),
        )

    def unpause(self) -> bool:
        """Lift the pause; False when there was none."""
        response = self._client.delete_item(TableName=self._table, Key=_key(PAUSE_KEY), ReturnValues="ALL_OLD")
        return "Attributes" in response

    def pause_of(self) -> dict[str, str] | None:
        """The pause (`paused_at`, `by`, `reason`), or None when rollouts may go on."""
        item = self._client.get_item(TableName=self._table, Key=_key(PAUSE_KEY), ConsistentRead=True)
        if "Item" not in item:
            return None
        data = _plain(item["Item"])
        return {name: str(data.get(name) or "") for name in ("paused_at", "by", "reason")}

    def _update(self, key: str, update: str, condition: str, names: dict[str, str], values: dict[str, Any]) -> bool:
        """A conditional UpdateItem (`names` and `values` exactly those the expressions use, as DynamoDB requires);
        False when the condition fails."""
        try:
            self._client.update_item(
                TableName=self._table,
                Key=_key(key),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={name: _SERIALIZER.serialize(value) for name, value in values.items()},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True


def _key(item_id: str) -> dict[str, Any]:
    return {"id": {"S": item_id}}


def _item(item_id: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"id": {"S": item_id}, **{name: _SERIALIZER.serialize(value) for name, value in data.items()}}


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {name: _DESERIALIZER.deserialize(value) for name, value in item.items()}


def _state(item: dict[str, Any]) -> RolloutState:
    data = _plain(item)
    try:
        return RolloutState.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise RegistryError(f"registry item {data.get('id')}: not a rollout CLM wrote ({exc})") from None
