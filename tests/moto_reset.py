"""moto's reset without rebuilding the backends it drops, so that each test's `mock_aws` costs less.

`mock_aws` resets moto when it starts and stops: moto's BackendDict.reset resets every backend (a service's own
clean-up, as S3's closing its objects' files, then BaseBackend.reset, which rebuilds the backend in place: EC2's
loads ~1,300 default AMIs, each with a snapshot and a volume, ~0.05 CPU-seconds a region) and then drops them all;
the next call builds a new backend on first use. The rebuilding serves only code that keeps a backend object across
a reset; CLM's code, the sandbox and the tests look each backend up in moto's dictionaries at every call. Here a
reset backend is emptied, not rebuilt: the services' clean-ups still run, and each test still starts on new backends
(tests/unit/test_harness.py).
"""

from __future__ import annotations

from moto.core.base_backend import BaseBackend


def _emptied(backend: BaseBackend) -> None:
    """Forget the backend's state (moto drops the backend right after its reset; nothing uses it again)."""
    backend.__dict__ = {}


def skip_rebuilding() -> None:
    """Make moto's resets in this process empty each backend instead of rebuilding it."""
    BaseBackend.reset = _emptied  # type: ignore[method-assign]
