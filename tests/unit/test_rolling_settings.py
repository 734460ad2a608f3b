"""A pool's roll settings from config items (clm.rolling.settings): counts, or percentages of the pool's size
resolved as Kubernetes resolves a Deployment's maxSurge (up) and maxUnavailable (down)."""

from __future__ import annotations

import pytest

from clm.errors import ValidationError
from clm.rolling.pool import RollSettings
from clm.rolling.settings import roll_settings


def settings(size: int = 200, **items: str) -> RollSettings:
    return roll_settings(items, {}, "aws:123456789012:eu-central-1:kube-1", size)


def test_counts_and_defaults() -> None:
    assert settings() == RollSettings(surge=0, max_unavailable=1, node_startup_timeout=600.0)
    assert settings(surge="2", max_unavailable="0", node_startup_timeout="5m") == RollSettings(2, 0, 300.0)


def test_percentages_of_the_pools_size() -> None:
    assert settings(max_unavailable="10%") == RollSettings(max_unavailable=20)
    assert settings(15, max_unavailable="10%", surge="10%") == RollSettings(surge=2, max_unavailable=1)  # up, down
    assert settings(5, max_unavailable="10%") == RollSettings(max_unavailable=1)  # both 0: 1, as Kubernetes
    assert settings(5, max_unavailable="10%", surge="1") == RollSettings(surge=1, max_unavailable=0)


def test_the_pools_items_win_and_bad_values_are_named() -> None:
    assert roll_settings({"max_unavailable": "3"}, {"max_unavailable": "50%"}, None, 10).max_unavailable == 3
    with pytest.raises(ValidationError) as error:
        settings(max_unavailable="120%", surge="x")
    message = str(error.value)
    assert "config_items.surge: invalid literal for int() with base 10: 'x'" in message
    assert "config_items.max_unavailable: '120%': a percentage is between 0% and 100%" in message
