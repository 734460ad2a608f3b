"""Endpoints for the EKS token tests: an EKS cluster in moto with a real CA, and a local HTTPS server that records
every connection (the attacker's endpoint a registry writer would point api_server_url at), and a Secrets Manager
secret bound to its cluster."""

from __future__ import annotations

import base64
import ssl
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from clm_sandbox.tls import self_signed

KUBE_1 = "aws:123456789012:eu-central-1:kube-1"  # examples/clusters.yaml's kube-1, the tests' cluster


def create_eks_cluster(session: Any, name: str, ca_pem: bytes, owner: str | None = KUBE_1) -> str:
    """Create EKS cluster `name` in moto with `ca_pem` as its certificate authority, tagged as CLM's cluster stack
    tags it for cluster id `owner` (None: untagged); returns its endpoint."""
    from moto.eks.models import eks_backends

    eks = session.client("eks")
    described = eks.create_cluster(
        name=name,
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": ["subnet-1"]},
        tags={f"kubernetes.io/cluster/{owner}": "owned"} if owner else {},
    )["cluster"]
    # moto makes up random text as the CA; a client needs a certificate it can load.
    backend = eks_backends["123456789012"][session.region_name]
    backend.clusters[name].certificate_authority = {"data": base64.b64encode(ca_pem).decode()}
    return described["endpoint"]


@dataclass
class RecordingServer:
    """What the attacker's endpoint saw: connections accepted, and requests with their Authorization header."""

    url: str
    ca_pem: bytes
    connections: list[str] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)


@contextmanager
def attacker_endpoint(lifetime: float = 60.0) -> Iterator[RecordingServer]:
    """An HTTPS server on 127.0.0.1 recording everything it is sent; it stops on exit or after `lifetime` s."""
    cert_pem, key_pem = self_signed()
    with tempfile.TemporaryDirectory() as folder:
        cert_file, key_file = Path(folder, "cert.pem"), Path(folder, "key.pem")
        cert_file.write_bytes(cert_pem)
        key_file.write_bytes(key_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def verify_request(self, request: Any, client_address: Any) -> bool:
            seen.connections.append(str(client_address))
            return True

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.requests.append((self.path, self.headers.get("Authorization", "")))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"kind": "APIVersions", "versions": ["v1"]}')

        def log_message(self, *args: Any) -> None:
            pass

    server = Server(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    seen = RecordingServer(f"https://127.0.0.1:{server.server_address[1]}", cert_pem)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    stopper = threading.Timer(lifetime, server.shutdown)
    thread.start()
    stopper.start()
    try:
        yield seen
    finally:
        stopper.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def store_kube_secret(session: Any, name: str, value: str, cluster_id: str | None = KUBE_1) -> None:
    """Create secret `name` holding `value`, bound to `cluster_id` by CLM's tag (None: unbound)."""
    tags = [{"Key": "clm:cluster-id", "Value": cluster_id}] if cluster_id else []  # clm.kube.auth.CLUSTER_ID_TAG
    session.client("secretsmanager").create_secret(Name=name, SecretString=value, Tags=tags)
