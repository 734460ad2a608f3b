"""The wait scale factor: where it comes from, what it accepts, and the Retry sleep it scales."""

from __future__ import annotations

import time
import types
from collections.abc import Iterator

import pytest

from clm_sandbox.patches import wait_scale


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    wait_scale.set_factor(None)


def test_factor_defaults_to_real_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(wait_scale.FACTOR_ENV, raising=False)
    assert wait_scale.factor() == 1.0


def test_setter_wins_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(wait_scale.FACTOR_ENV, "0.5")
    assert wait_scale.factor() == 0.5
    wait_scale.set_factor(0.01)
    assert wait_scale.factor() == 0.01


def test_scaled_restores_the_previous_factor() -> None:
    wait_scale.set_factor(0.5)
    with wait_scale.scaled(0):
        assert wait_scale.factor() == 0
    assert wait_scale.factor() == 0.5


@pytest.mark.parametrize("bad", ["-1", "nan", "fast"])
def test_bad_factor_from_the_environment_names_the_variable(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv(wait_scale.FACTOR_ENV, bad)
    with pytest.raises(ValueError, match=r"\$CLM_SANDBOX_WAIT_SCALE: wait scale factor must be a number >= 0"):
        wait_scale.factor()


def test_bad_factor_from_the_setter_is_refused() -> None:
    with pytest.raises(ValueError, match=r"set_factor\(\)"):
        wait_scale.set_factor(-0.1)


def test_retry_sleep_of_the_interpreter_is_scaled() -> None:
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    wait_scale.install()
    wait_scale.set_factor(0.001)
    began = time.monotonic()
    retrier_decl.time.sleep(5)
    assert time.monotonic() - began < 0.5


def test_a_timeout_the_definition_sets_is_scaled_and_the_default_is_not() -> None:
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import TimeoutSeconds

    wait_scale.install()
    wait_scale.set_factor(0.02)
    for timeout, expected in (
        (TimeoutSeconds(600), 12.0),
        (TimeoutSeconds(TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS), 99999999),
    ):
        env = types.SimpleNamespace(stack=[])
        timeout._eval_body(env)
        assert env.stack == [pytest.approx(expected)]
