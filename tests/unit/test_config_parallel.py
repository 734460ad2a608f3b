"""Bounded parallel reads of a configuration source's files."""

from __future__ import annotations

import threading
import time

import pytest

from clm.config.parallel import MAX_WORKERS, read_all


def test_reads_every_key_in_order_at_most_the_bound_at_a_time():
    running, most = 0, 0
    lock = threading.Lock()

    def read(key: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.01)
        with lock:
            running -= 1
        return key * 2

    keys = list(range(40, 0, -1))
    result = read_all(keys, read)
    assert list(result) == keys and all(value == key * 2 for key, value in result.items())
    assert 1 < most <= MAX_WORKERS


def test_the_first_failure_is_raised_and_reads_not_started_are_cancelled():
    started: list[int] = []

    def read(key: int) -> int:
        started.append(key)
        if key == 1:
            raise KeyError("no such file: 1")
        time.sleep(0.05)
        return key

    with pytest.raises(KeyError, match="no such file: 1"):
        read_all(range(200), read, workers=4)
    assert len(started) < 200


def test_one_key_or_one_worker_reads_in_the_calling_thread():
    caller = threading.get_ident()
    assert read_all(["a"], lambda key: threading.get_ident()) == {"a": caller}
    assert set(read_all("abc", lambda key: threading.get_ident(), workers=1).values()) == {caller}
