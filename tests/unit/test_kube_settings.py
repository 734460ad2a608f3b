"""Drain settings: Go durations, CLM's defaults, errors naming the config item; annotation timestamps."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clm.errors import ValidationError
from clm.kube.settings import DrainSettings, format_duration, parse_duration
from clm.timestamps import format_time, parse_time


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("6h", 21600),
        ("72h", 259200),
        ("5m", 300),
        ("30s", 30),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("250ms", 0.25),
        ("0", 0),
        ("0s", 0),
        (" 2m ", 120),
        ("1h0m10s", 3610),
        ("10us", 1e-5),
        ("3ns", 3e-9),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "6", "h", "6 h", "-5m", "5x", "1h 30m", "m5", "1.2.3s", "5mm"])
def test_parse_duration_refuses_malformed(text):
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


@given(st.integers(min_value=0, max_value=10**7))
def test_format_and_parse_round_trip(seconds):
    assert parse_duration(format_duration(seconds)) == seconds


def test_defaults_are_clms():
    settings = DrainSettings.from_config_items({})
    assert settings == DrainSettings(
        grace_period=6 * 3600,
        min_pod_lifetime=72 * 3600,
        min_healthy_sibling_lifetime=3600,
        min_unhealthy_sibling_lifetime=6 * 3600,
        force_evict_interval=300,
        poll_interval=30,
        taint_effect="PreferNoSchedule",
    )


@pytest.mark.parametrize(
    ("value", "effect"), [("true", "NoSchedule"), ("false", "PreferNoSchedule"), ("True", "PreferNoSchedule")]
)
def test_the_taint_effect_follows_clms_config_item(value, effect):
    """CLM compares decommission_node_no_schedule_taint with "true" exactly (provisioner/clusterpy.go)."""
    assert DrainSettings.from_config_items({"decommission_node_no_schedule_taint": value}).taint_effect == effect


@pytest.mark.parametrize(("master", "effect"), [(True, "PreferNoSchedule"), (False, "NoSchedule")])
def test_masters_are_exempt_from_the_no_schedule_taint(master, effect):
    """CLM's node_pool_manager.go MarkNodeForDecommission: NoSchedule only `if m.noScheduleTaint && !node.Master`
    (a node of a pool whose profile contains "master"): control-plane pods that tolerate only their own taints keep
    a place while the masters roll."""
    items = {"decommission_node_no_schedule_taint": "true"}
    assert DrainSettings.from_config_items(items, master=master).taint_effect == effect


def test_config_items_override_defaults():
    settings = DrainSettings.from_config_items(
        {"drain_grace_period": "2s", "drain_force_evict_interval": "1m", "unrelated": "x"}
    )
    assert (settings.grace_period, settings.force_evict_interval, settings.poll_interval) == (2, 60, 30)


def test_every_bad_item_is_named_with_the_cluster():
    with pytest.raises(ValidationError) as caught:
        DrainSettings.from_config_items({"drain_grace_period": "6 hours", "drain_poll_interval": "x"}, "kube-1")
    assert caught.value.problems == [
        "config_items.drain_grace_period: '6 hours' is not a duration like 6h, 5m, 30s or 1h30m",
        "config_items.drain_poll_interval: 'x' is not a duration like 6h, 5m, 30s or 1h30m",
    ]
    assert "cluster kube-1" in str(caught.value)


def test_timestamps_are_whole_seconds_rounded_up_only_when_asked():
    moment = datetime(2024, 5, 1, 10, 0, 59, 1, tzinfo=UTC)
    assert format_time(moment) == "2024-05-01T10:00:59Z"
    assert format_time(moment, round_up=True) == "2024-05-01T10:01:00Z"
    assert format_time(moment.replace(microsecond=0), round_up=True) == "2024-05-01T10:00:59Z"
    assert parse_time("2024-05-01T12:00:00+02:00") == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert parse_time("2024-05-01T10:00:00.5Z") == datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=UTC)


def test_a_rolls_steps_take_the_master_exemption_from_the_pools_profile(example_clusters):
    """The roll's drain and mark steps (clm.workflow.roll_steps) ask for the settings of their pool: a profile
    containing "master" (CLM's api/node_pool.go IsMaster) keeps PreferNoSchedule."""
    import dataclasses

    from clm.workflow.roll_steps import pool_drain_settings

    worker = example_clusters[0].node_pools[0]
    masters = dataclasses.replace(worker, name="masters", profile="master-default")
    items = {**example_clusters[0].config_items, "decommission_node_no_schedule_taint": "true"}
    cluster = dataclasses.replace(example_clusters[0], node_pools=[masters, worker], config_items=items)
    assert pool_drain_settings(cluster, "masters").taint_effect == "PreferNoSchedule"
    assert pool_drain_settings(cluster, worker.name).taint_effect == "NoSchedule"
    assert pool_drain_settings(cluster, "removed-pool").taint_effect == "NoSchedule"
