"""KubeClient over recorded API responses: JSON, typed errors, bounded retries, no credentials shown."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from clm.kube.client import KubeClient, WatchStream
from clm.kube.errors import KubeApiError, KubeAuthError
from clm.kube.transport import RawResponse, TransportFailure
from clm.kube.waiting import WatchSpec, wait_for_event

SECRET_TOKEN = "s3cr3t-token-value"


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A metav1.Status as the API server returns it for errors."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        body["details"] = details
    return body


def response(status: int, body: Any, headers: dict[str, str] | None = None) -> RawResponse:
    """A recorded response."""
    return RawResponse(status, headers or {}, json.dumps(body).encode())


class RecordedTransport:
    """Answers requests from recorded responses keyed by (method, path); the last one of a key repeats."""

    server = "https://api.example.org"

    def __init__(
        self,
        recordings: dict[tuple[str, str], list[RawResponse | Exception]],
        streams: dict[str, list[dict[str, Any]] | RawResponse] | None = None,
    ):
        self.recordings = {key: list(values) for key, values in recordings.items()}
        self.streams = streams or {}
        self.calls: list[dict[str, Any]] = []

    def send(
        self, method: str, path: str, query: list[tuple[str, str]], content_type: str, body: Any, timeout: float
    ) -> RawResponse:
        self.calls.append(
            {"method": method, "path": path, "query": dict(query), "content_type": content_type, "body": body}
        )
        answers = self.recordings.get((method, path))
        if not answers:
            return response(404, status_body(404, "NotFound", f"{path} not recorded"))
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def stream(self, path: str, query: list[tuple[str, str]], timeout: float) -> RecordedStream | RawResponse:
        self.calls.append({"method": "WATCH", "path": path, "query": dict(query)})
        recorded = self.streams.get(path)
        if recorded is None:
            raise AssertionError(f"no watch expected on {path}")
        return recorded if isinstance(recorded, RawResponse) else RecordedStream(recorded)

    def close(self) -> None:
        """Nothing to release."""

    def paths(self, method: str) -> list[str]:
        """The paths requested with `method`, in order."""
        return [call["path"] for call in self.calls if call["method"] == method]


class RecordedStream:
    """A watch that sends recorded events, then stays open until closed."""

    def __init__(self, events: list[dict[str, Any]]):
        self.events = events
        self.closed = threading.Event()

    def lines(self) -> Iterator[str]:
        yield from (json.dumps(event) + "\n" for event in self.events)
        self.closed.wait(30)

    def close(self) -> None:
        self.closed.set()


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch):
    monkeypatch.setattr("clm.kube.client.time.sleep", lambda _: None)


def test_request_decodes_json_and_encodes_query():
    transport = RecordedTransport({("GET", "/api/v1/pods"): [response(200, {"items": [{"a": 1}]})]})
    client = KubeClient(transport, "c1")
    assert client.request(
        "GET", "/api/v1/pods", query={"fieldSelector": "spec.nodeName=n1", "watch": False, "limit": None}
    ) == {"items": [{"a": 1}]}
    assert transport.calls[0]["query"] == {"fieldSelector": "spec.nodeName=n1", "watch": "false"}


def test_transient_statuses_are_retried_then_succeed():
    transport = RecordedTransport(
        {
            ("GET", "/x"): [
                response(503, status_body(503, "ServiceUnavailable", "etcd leader changed")),
                TransportFailure("connection reset"),
                response(429, status_body(429, "TooManyRequests", "slow down"), {"retry-after": "1"}),
                response(200, {"ok": True}),
            ]
        }
    )
    assert KubeClient(transport).request("GET", "/x") == {"ok": True}
    assert len(transport.calls) == 4


def test_retries_are_bounded_and_the_error_names_cluster_method_path_and_reason():
    transport = RecordedTransport({("GET", "/x"): [response(503, status_body(503, "ServiceUnavailable", "down"))]})
    with pytest.raises(KubeApiError) as caught:
        KubeClient(transport, "aws:1:eu-central-1:kube-1").request("GET", "/x", retries=2)
    assert len(transport.calls) == 3
    assert str(caught.value) == "cluster aws:1:eu-central-1:kube-1: GET /x: 503 down"
    assert caught.value.status == 503 and caught.value.asl_name == "KubeApiError"


@pytest.mark.parametrize(
    ("status", "reason", "details", "calls"),
    [
        (422, "Invalid", None, 1),
        (500, "InternalError", None, 1),  # e.g. 1.20's "failed to create typed patch object": retrying cannot help
        (500, "ServerTimeout", None, 4),
        (500, "InternalError", {"retryAfterSeconds": 1}, 4),
    ],
)
def test_only_retryable_errors_are_retried(status, reason, details, calls):
    transport = RecordedTransport({("PATCH", "/x"): [response(status, status_body(status, reason, "bad", details))]})
    with pytest.raises(KubeApiError, match=f"{status} bad"):
        KubeClient(transport).request("PATCH", "/x", body={})
    assert len(transport.calls) == calls


def test_unauthorized_is_an_auth_error_without_the_token():
    transport = RecordedTransport(
        {("GET", "/version"): [response(401, status_body(401, "Unauthorized", "Unauthorized"))]}
    )
    with pytest.raises(KubeAuthError) as caught:
        KubeClient(transport, "c1").request("GET", "/version")
    assert "refused the credentials" in str(caught.value)
    assert len(transport.calls) == 1


def test_get_returns_none_for_not_found():
    assert KubeClient(RecordedTransport({})).get("/api/v1/nodes/gone") is None


def test_token_client_never_shows_the_token(tmp_path):
    client = KubeClient.from_token("https://127.0.0.1:6443", SECRET_TOKEN, None, "c1")
    try:
        assert SECRET_TOKEN not in repr(client)
        assert SECRET_TOKEN not in repr(client.transport)
        with pytest.raises(KubeApiError) as caught:  # nothing listens there
            client.request("GET", "/version", retries=0, timeout=2)
        assert SECRET_TOKEN not in str(caught.value)
        assert caught.value.status == 0
    finally:
        client.close()


def test_callable_token_is_asked_for_each_request():
    tokens = iter(["t1", "t2", "t3"])
    client = KubeClient.from_token("https://127.0.0.1:6443", lambda: next(tokens))
    configuration = client.transport.api_client.configuration
    assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer t2"
    assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer t3"


def test_kubeconfig_errors_name_the_file_not_its_content(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(f"apiVersion: v1\nusers: [{{name: u, user: {{token: {SECRET_TOKEN}}}}}]\n")
    with pytest.raises(KubeAuthError) as caught:
        KubeClient.from_kubeconfig(path, cluster_id="c1")
    assert str(path) in str(caught.value) and SECRET_TOKEN not in str(caught.value)
    with pytest.raises(KubeAuthError, match="unreadable"):
        KubeClient.from_kubeconfig(tmp_path / "missing")


def pdb_event(kind: str, allowed: int) -> dict[str, Any]:
    return {
        "type": kind,
        "object": {"metadata": {"name": "web", "namespace": "app"}, "status": {"disruptionsAllowed": allowed}},
    }


def opened(kind: str, pdb: dict[str, Any]) -> bool:
    return pdb["status"]["disruptionsAllowed"] > 0


def test_wait_for_event_wakes_on_the_first_relevant_event_from_the_list_version():
    transport = RecordedTransport(
        {},
        streams={"/pdbs": [pdb_event("BOOKMARK", 1), pdb_event("MODIFIED", 0), pdb_event("MODIFIED", 1)], "/pods": []},
    )
    specs = [
        WatchSpec("/pdbs", "41", opened),
        WatchSpec("/pods", "42", lambda kind, _: kind == "DELETED", (("fieldSelector", "spec.nodeName=n1"),)),
    ]
    started = time.monotonic()
    assert wait_for_event(KubeClient(transport), specs, time.monotonic() + 10) == "MODIFIED web"
    assert time.monotonic() - started < 2
    watches = {c["path"]: c["query"] for c in transport.calls}
    assert watches["/pdbs"]["resourceVersion"] == "41" and watches["/pdbs"]["watch"] == "true"
    assert watches["/pods"] == {
        "fieldSelector": "spec.nodeName=n1",
        "resourceVersion": "42",
        "watch": "true",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "10",
    }


def test_wait_for_event_falls_back_to_the_deadline_when_a_watch_cannot_open():
    forbidden = response(403, status_body(403, "Forbidden", "cannot watch"))
    transport = RecordedTransport({}, streams={"/pdbs": forbidden})
    started = time.monotonic()
    assert wait_for_event(KubeClient(transport), [WatchSpec("/pdbs", "1", opened)], started + 0.3) is None
    assert 0.25 <= time.monotonic() - started < 1.5
    assert len(transport.calls) == 1  # no busy loop


def test_a_garbled_watch_line_ends_the_stream_instead_of_killing_its_reader():
    """A stream closed under its reader (the waiter's deadline) can hand it a garbled last line; seen on the
    sandbox's apiserver as `Invalid control character` in a drain's pod watch thread. The stream ends: the
    waiter wakes (`watch ... ended`) and lists again, as for any ended watch."""

    class Garbled:
        def lines(self) -> Iterator[str]:
            yield json.dumps({"type": "ADDED", "object": {}}) + "\n"
            yield '{"type": "MODIFIED", "object": {"a": "\x00'

        def close(self) -> None:
            pass

    assert list(WatchStream(Garbled()).events()) == [{"type": "ADDED", "object": {}}]
