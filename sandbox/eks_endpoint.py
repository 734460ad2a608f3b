"""EKS clusters' API endpoints in the sandbox: a TLS front door per EKS cluster to the session's control plane.

On AWS an EKS endpoint accepts aws-iam-authenticator's bearer tokens (`k8s-aws-v1.` + a presigned STS
GetCallerIdentity URL that signs the header `x-k8s-aws-id: <cluster name>`) and nothing else. A front door does the
same: it checks the token's SigV4 signature against the secret of the role session (moto's STS) that signed it, for
its own cluster's name and within 15 minutes, and forwards the request with the control plane's admin token
(responses streamed, so watches work). A token for another cluster's name, unsigned, or from unknown credentials is
answered 401. Its certificate is self-signed (its own CA), as an EKS cluster's CA is its own.

`serving(kubeconfig)` makes the sandbox's `AWS::EKS::Cluster` (clm_sandbox.patches.cfn_eks_cluster) open one front
door per EKS cluster it creates, in front of that kubeconfig's API server.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import http.client
import ssl
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_HEADER = "x-k8s-aws-id"
TOKEN_LIFETIME = datetime.timedelta(minutes=15)  # what EKS accepts, whatever X-Amz-Expires says
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "authorization", "host", "content-length"}
_lock = threading.Lock()
_upstream: dict[str, Upstream] = {}  # "": the API server being served, while `serving`
_doors: dict[tuple[str, str, str], FrontDoor] = {}  # (account, region, name) -> its front door


@dataclass(frozen=True)
class Upstream:
    """The API server behind every front door: its URL, CA (PEM) and admin token."""

    server: str
    ca_pem: bytes = field(repr=False)
    token: str = field(repr=False)

    @classmethod
    def from_kubeconfig(cls, path: Path) -> Upstream:
        """The first cluster and user of a token kubeconfig (the control plane's)."""
        config = yaml.safe_load(path.read_text())
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        return cls(cluster["server"], base64.b64decode(cluster["certificate-authority-data"]), user["token"])


def _secret_of(access_key_id: str) -> str | None:
    """The secret key of a role session moto's STS issued (None: unknown key)."""
    from moto.sts.models import sts_backends

    for account in list(sts_backends):
        for backend in list(sts_backends[account].values()):
            assumed = backend.get_assumed_role_from_access_key(access_key_id)
            if assumed is not None:
                return str(assumed.secret_access_key)
    return None


def token_names(token: str, cluster_name: str, now: datetime.datetime | None = None) -> bool:
    """Whether `token` is an EKS token for `cluster_name`, signed by a role session moto's STS knows, not older than
    15 minutes (SigV4 query signing, as STS would check it)."""
    if not token.startswith(TOKEN_PREFIX):
        return False
    encoded = token[len(TOKEN_PREFIX) :]
    try:
        url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except ValueError:
        return False
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    params = dict(query)
    signed = params.get("X-Amz-SignedHeaders", "").split(";")
    if params.get("Action") != "GetCallerIdentity" or CLUSTER_HEADER not in signed or "host" not in signed:
        return False
    try:
        key_id, date, region, service, _ = params["X-Amz-Credential"].split("/")
        stamp = datetime.datetime.strptime(params["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
    except (KeyError, ValueError):
        return False
    current = now or datetime.datetime.now(datetime.UTC)
    secret = _secret_of(key_id)
    if secret is None or service != "sts" or not (stamp <= current + datetime.timedelta(minutes=5)):
        return False
    if current - stamp > TOKEN_LIFETIME:
        return False
    canonical_query = "&".join(f"{_quote(k)}={_quote(v)}" for k, v in sorted(query) if k != "X-Amz-Signature")
    headers = {"host": parts.netloc, CLUSTER_HEADER: cluster_name}
    canonical = "\n".join(
        [
            "GET",
            parts.path or "/",
            canonical_query,
            "".join(f"{name}:{headers[name]}\n" for name in sorted(signed) if name in headers),
            ";".join(sorted(signed)),
            hashlib.sha256(b"").hexdigest(),
        ]
    )
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{params['X-Amz-Date']}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, params.get("X-Amz-Signature", ""))


def _quote(text: str) -> str:
    return urllib.parse.quote(text, safe="-_.~")


class FrontDoor:
    """One EKS cluster's endpoint (see the module doc); `url` and `ca_pem` are what DescribeCluster names."""

    def __init__(self, cluster_name: str, upstream: Upstream):
        from clm_sandbox.tls import self_signed  # cryptography: only when a door opens

        self.cluster_name, self.upstream = cluster_name, upstream
        self.ca_pem, key_pem = self_signed("127.0.0.1")
        self.refused = 0
        with tempfile.TemporaryDirectory() as folder:
            cert_file, key_file = Path(folder, "cert.pem"), Path(folder, "key.pem")
            cert_file.write_bytes(self.ca_pem)
            key_file.write_bytes(key_pem)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert_file, key_file)
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name=f"eks-{cluster_name}", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def upstream_connection(self) -> http.client.HTTPSConnection:
        """A connection to the control plane, trusting only its CA."""
        context = ssl.create_default_context(cadata=self.upstream.ca_pem.decode())
        parts = urllib.parse.urlsplit(self.upstream.server)
        return http.client.HTTPSConnection(parts.hostname or "", parts.port, context=context, timeout=600)


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def _handler(door: FrontDoor) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            auth = self.headers.get("Authorization", "")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if not auth.startswith("Bearer ") or not token_names(auth[7:], door.cluster_name):
                door.refused += 1
                self._send(401, b'{"kind":"Status","status":"Failure","reason":"Unauthorized","code":401}')
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
            headers["Authorization"] = f"Bearer {door.upstream.token}"
            connection = door.upstream_connection()
            try:
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in _HOP_HEADERS:
                        self.send_header(key, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while chunk := response.read1(65536):
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            finally:
                connection.close()

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._forward()

        def do_POST(self) -> None:
            self._forward()

        def do_PUT(self) -> None:
            self._forward()

        def do_PATCH(self) -> None:
            self._forward()

        def do_DELETE(self) -> None:
            self._forward()

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serving(kubeconfig: Path) -> Iterator[None]:
    """While open, each EKS cluster the sandbox's CloudFormation creates gets a front door to `kubeconfig`'s API
    server; on exit every door closes."""
    with _lock:
        _upstream[""] = Upstream.from_kubeconfig(kubeconfig)
    try:
        yield
    finally:
        with _lock:
            _upstream.clear()
            doors = list(_doors.values())
            _doors.clear()
        for door in doors:
            door.close()


def open_door(account: str, region: str, name: str) -> FrontDoor | None:
    """The front door of EKS cluster `name` (opened now unless open), None when nothing is being served."""
    with _lock:
        key = (account, region, name)
        if "" not in _upstream:
            return None
        if key not in _doors:
            _doors[key] = FrontDoor(name, _upstream[""])
        return _doors[key]


def close_door(account: str, region: str, name: str) -> None:
    """Close EKS cluster `name`'s front door, if open."""
    with _lock:
        door = _doors.pop((account, region, name), None)
    if door is not None:
        door.close()
