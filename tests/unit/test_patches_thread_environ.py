"""A thread's own environment variables over os.environ: seen by that thread only, never mutating the process's."""

from __future__ import annotations

import os
import threading

import pytest

from clm_sandbox.patches._thread_environ import thread_environment


def test_the_thread_sees_its_values_and_others_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLM_BASE", "base")
    monkeypatch.delenv("CLM_OWN", raising=False)
    seen_elsewhere: list[str | None] = []
    with thread_environment({"CLM_OWN": "own", "CLM_BASE": "over"}):
        assert (os.environ["CLM_OWN"], os.getenv("CLM_BASE")) == ("own", "over")
        assert {"CLM_OWN", "CLM_BASE"} <= set(os.environ) and dict(os.environ)["CLM_OWN"] == "own"
        other = threading.Thread(target=lambda: seen_elsewhere.extend([os.getenv("CLM_OWN"), os.getenv("CLM_BASE")]))
        other.start()
        other.join()
    assert seen_elsewhere == [None, "base"]
    assert "CLM_OWN" not in os.environ and os.environ["CLM_BASE"] == "base"


def test_writes_and_deletions_inside_stay_inside(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLM_BASE", "base")
    with thread_environment({}):
        os.environ["CLM_WRITTEN"] = "x"
        del os.environ["CLM_BASE"]
        assert "CLM_BASE" not in os.environ and os.environ["CLM_WRITTEN"] == "x"
        assert "CLM_BASE" not in list(os.environ) and len(os.environ) == len(list(os.environ))
        with pytest.raises(KeyError):
            del os.environ["CLM_BASE"]
    assert os.environ["CLM_BASE"] == "base" and "CLM_WRITTEN" not in os.environ


def test_other_threads_iterate_safely_while_calls_come_and_go() -> None:
    stop, errors = threading.Event(), []

    def iterate() -> None:
        while not stop.is_set():
            try:
                dict(os.environ.items())  # what every boto3 client creation does (proxy lookup)
            except Exception as exc:  # any error is the failure under test
                errors.append(exc)

    reader = threading.Thread(target=iterate)
    reader.start()
    for index in range(2000):
        with thread_environment({f"CLM_CALL_{index % 7}": "1", "CLM_REGISTRY_TABLE": "t"}):
            pass
    stop.set()
    reader.join()
    assert errors == []
