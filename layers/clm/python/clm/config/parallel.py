"""Reading many files of a configuration source at once, a bounded number at a time.

A configuration of hundreds of files read one request after another takes seconds of a step with a timeout;
in parallel it takes the time of the slowest few. The bound matches botocore's connection pool per client (10),
so that no request waits for a connection and no connection is thrown away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

MAX_WORKERS = 10

K = TypeVar("K")
V = TypeVar("V")


def read_all(keys: Iterable[K], read: Callable[[K], V], workers: int | None = None) -> dict[K, V]:
    """`{key: read(key)}` for every key, at most `workers` (default MAX_WORKERS) at a time, in the order of `keys`.

    The first read that fails (in key order) raises its error; reads not started yet are cancelled.
    """
    keys = list(keys)
    workers = workers or MAX_WORKERS
    if len(keys) < 2 or workers < 2:
        return {key: read(key) for key in keys}
    pool = ThreadPoolExecutor(max_workers=min(workers, len(keys)), thread_name_prefix="clm-config")
    try:
        return dict(zip(keys, pool.map(read, keys), strict=True))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
