"""One botocore loader for every session of a test process, so that AWS's service models are parsed once.

A new botocore session (each test's `aws` fixture, and the sessions CLM's code makes: clm.aws per client and
credentials, the CLI per command) reads the same JSON again through a loader of its own: the service model, the
endpoint rules, the list of services, ~0.13 CPU-seconds for three clients; ~600 sessions in the unit tests. The
data is the same for every session, so one loader per data path serves them all.
"""

from __future__ import annotations

import functools

import botocore.session
from botocore.loaders import Loader, create_loader


@functools.cache
def _loader(search_path_string: str | None) -> Loader:
    return create_loader(search_path_string)


def shared_loader(search_path_string: str | None = None) -> Loader:
    """The process's loader for this data path (botocore's `create_loader` contract).

    boto3 appends its own data folder to a session's loader: each path is kept once, so the list stays short."""
    loader = _loader(search_path_string)
    loader.search_paths[:] = list(dict.fromkeys(loader.search_paths))
    return loader


def share() -> None:
    """Make every botocore session created from now on in this process use the shared loader."""
    botocore.session.create_loader = shared_loader
