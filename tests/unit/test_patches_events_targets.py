"""What a state machine target of an EventBridge rule receives (the patch's pure parts)."""

from __future__ import annotations

import json

import pytest

from clm_sandbox.patches.events_targets import InputPathError, delivered_event, select, target_input

EVENT = {
    "version": "0",
    "id": "e-1",
    "detail-type": "Cluster Changed",
    "source": "clm.registry",
    "account": "123456789012",
    "time": "2024-05-01T12:00:00Z",
    "region": "eu-central-1",
    "resources": ["arn:aws:dynamodb:eu-central-1:123456789012:table/clm-registry"],
    "detail": {"cluster_id": "kube-1", "node_pools": [{"name": "default"}]},
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$", EVENT),
        ("$.detail", EVENT["detail"]),
        ("$.detail-type", "Cluster Changed"),
        ("$['detail-type']", "Cluster Changed"),
        ("$.resources[0]", EVENT["resources"][0]),
        ("$.detail.node_pools[0].name", "default"),
    ],
)
def test_input_path_selects(path: str, expected: object) -> None:
    assert select(EVENT, path) == expected


@pytest.mark.parametrize(
    ("path", "message"), [("detail", "must start with"), ("$.detail..x", "cannot parse"), ("$.nope", "selects nothing")]
)
def test_bad_input_path_is_an_error_naming_the_path(path: str, message: str) -> None:
    with pytest.raises(InputPathError, match=message):
        select(EVENT, path)


def test_input_wins_over_input_path() -> None:
    assert target_input({"Input": '{"a": 1}', "InputPath": "$.detail"}, EVENT, 0) == '{"a": 1}'


def test_input_transformer_fills_the_template() -> None:
    transformer = {
        "InputPathsMap": {"id": "$.detail.cluster_id", "kind": "$.detail-type"},
        "InputTemplate": '{"cluster": "<id>", "why": "<kind>"}',
    }
    assert json.loads(target_input({"InputTransformer": transformer}, EVENT, 1.5)) == {
        "cluster": "kube-1",
        "why": "Cluster Changed",
    }


def test_without_input_settings_the_target_gets_the_event() -> None:
    assert json.loads(target_input({}, EVENT, 0)) == EVENT


def test_delivered_event_has_an_iso_time_and_no_moto_fields() -> None:
    moto_event = {**EVENT, "time": 1714564800.25, "ingestion-time": 1714564800.5}
    assert delivered_event(moto_event) == EVENT
