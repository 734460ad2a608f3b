"""What a step's error becomes at the Lambda boundary: transient errors as TransientError (the state machines
retry it), every other error as itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from clm.kube.errors import ApplyError, KubeApiError
from clm.workflow.lambda_handler import TransientError, step_handler
from tests.lambdas import FakeContext

CLUSTER = "aws:123456789012:eu-central-1:kube-1"


@pytest.fixture(autouse=True)
def _no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "CLM")


def failing(error: Exception) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """A handler whose only step raises `error`."""

    def step(event: dict[str, Any]) -> dict[str, Any]:
        raise error

    return step_handler("kube", {"apply": step})


def test_an_unreachable_api_server_is_a_transient_error_with_the_original_message():
    unreachable = KubeApiError("GET", "/api/v1/nodes", 0, "https://127.0.0.1:1: Connection refused", CLUSTER)
    with pytest.raises(TransientError) as raised:
        failing(unreachable)({"step": "apply", "cluster_id": CLUSTER}, FakeContext())
    assert (
        str(raised.value)
        == f"cluster {CLUSTER}: GET /api/v1/nodes: no response https://127.0.0.1:1: Connection refused"
    )
    assert raised.value.__cause__ is unreachable


@pytest.mark.parametrize("status", [429, 503])
def test_throttling_and_unavailable_are_transient(status: int):
    with pytest.raises(TransientError):
        failing(KubeApiError("GET", "/api", status, "try later", CLUSTER))({"step": "apply"}, FakeContext())


def test_other_errors_keep_their_type():
    forbidden = KubeApiError("PATCH", "/api/v1/namespaces/x", 403, "forbidden", CLUSTER)
    with pytest.raises(KubeApiError) as raised:
        failing(forbidden)({"step": "apply"}, FakeContext())
    assert raised.value is forbidden


def test_an_error_naming_the_object_stays_transient_with_its_location():
    """apply, drain and deletions wrap the client's error to name file, object or node; retried all the same."""
    dropped = ApplyError("manifests/x/a.yaml (document 1): APIService v1.x: no response Connection aborted", CLUSTER)
    located = ApplyError(dropped.message, CLUSTER, transient=True)
    with pytest.raises(TransientError, match=r"manifests/x/a.yaml \(document 1\): APIService v1.x"):
        failing(located)({"step": "apply"}, FakeContext())
    with pytest.raises(ApplyError):
        failing(dropped)({"step": "apply"}, FakeContext())
