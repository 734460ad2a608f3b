"""A real Kubernetes v1.20.2 control plane on loopback for the sandbox and integration tests.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler run as child processes from
binaries that ``sandbox/build-control-plane.sh`` builds once and caches under
``${CLM_CACHE:-~/.cache/clm}/control-plane/v1.20.2/``. There are no nodes: the node simulator
plays the kubelets.

    with ControlPlane() as cp:
        client = kubernetes.config.new_client_from_config(str(cp.kubeconfig_path))
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

import yaml

log = logging.getLogger(__name__)

K8S_VERSION = "v1.20.2"
BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")
BUILD_SCRIPT = Path(__file__).resolve().with_name("build-control-plane.sh")
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
# `serviceaccount-token` is the legacy token controller: without it service accounts get no
# token Secret and, in 1.20, the ServiceAccount admission plugin then refuses every pod.
CONTROLLERS = (
    "disruption,garbagecollector,namespace,replicaset,deployment,daemonset,statefulset,job,"
    "serviceaccount,serviceaccount-token"
)
_COMPONENT_ORDER = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
_LOG_TAIL_LINES = 30
_PORT_IN_USE = re.compile(r"address already in use", re.IGNORECASE)
_MANIFEST_LINE = re.compile(r"([0-9a-f]{64}) [ *](\S+)")


class ControlPlaneError(RuntimeError):
    """The control plane could not be started or stopped."""


class CacheError(ControlPlaneError):
    """The cached binaries are missing or do not match their manifest."""


class PortInUseError(ControlPlaneError):
    """A port the control plane needs is already taken."""


def cache_root() -> Path:
    """The cache root: ``$CLM_CACHE`` or ``~/.cache/clm``."""
    return Path(os.environ.get("CLM_CACHE") or Path.home() / ".cache" / "clm")


def default_binaries_dir() -> Path:
    """Where the build script puts the binaries for :data:`K8S_VERSION`."""
    return cache_root() / "control-plane" / K8S_VERSION


_verified: dict[tuple[str, tuple[tuple[int, int, int], ...]], dict[str, Path]] = {}


def verify_binaries(directory: Path | None = None) -> dict[str, Path]:
    """Check the cached binaries against ``manifest.sha256``; return their paths by name.

    Raises :class:`CacheError` naming the build script when anything is missing or mismatched.
    A verified state (same files, sizes and mtimes) is not hashed again in this process.
    """
    directory = directory or default_binaries_dir()
    hint = f"run {BUILD_SCRIPT} (or clm_sandbox.controlplane.ensure_built()) to build it"
    manifest = directory / "manifest.sha256"
    if not manifest.is_file():
        raise CacheError(f"control plane binaries not built: {manifest} is missing; {hint}")
    expected: dict[str, str] = {}
    for line in manifest.read_text(errors="replace").splitlines():
        match = _MANIFEST_LINE.fullmatch(line)
        if not match:
            raise CacheError(f"corrupt manifest {manifest} (bad line {line[:80]!r}); {hint}")
        expected[match.group(2)] = match.group(1)
    paths = {name: directory / name for name in BINARIES}
    missing = [name for name in BINARIES if name not in expected or not paths[name].is_file()]
    if extra := sorted(set(expected) - set(BINARIES)):
        raise CacheError(f"corrupt manifest {manifest} (unexpected {', '.join(extra)}); {hint}")
    if missing:
        raise CacheError(f"control plane cache {directory} lacks {', '.join(missing)}; {hint}")
    files = [manifest, *(paths[name] for name in BINARIES)]
    stats = tuple((st.st_ino, st.st_size, st.st_mtime_ns) for st in (f.stat() for f in files))
    key = (str(directory.resolve()), stats)
    if key in _verified:
        return dict(_verified[key])
    for name in BINARIES:
        digest = hashlib.sha256()
        with paths[name].open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
        if digest.hexdigest() != expected[name]:
            raise CacheError(f"control plane cache {directory}: {name} does not match the manifest; {hint}")
        if not os.access(paths[name], os.X_OK):
            raise CacheError(f"control plane cache {directory}: {name} is not executable; {hint}")
    _verified[key] = paths
    return dict(paths)


def ensure_built(log_path: Path | None = None, timeout: float = 3600.0) -> dict[str, Path]:
    """Return the verified binaries, running the build script first when the cache is not complete.

    The build's output goes to ``log_path`` (default: ``<cache>/control-plane/build.log``); a
    failed build raises :class:`ControlPlaneError` with the tail of that log.
    """
    try:
        return verify_binaries()
    except CacheError:
        pass
    lock_path = cache_root() / "control-plane.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time (parallel test workers); the others wait, then use it
        try:
            return verify_binaries()
        except CacheError as exc:
            log.info("%s: building it (several minutes)", exc)
        return _build(log_path or cache_root() / "control-plane" / "build.log", timeout)


def _build(log_path: Path, timeout: float) -> dict[str, Path]:
    """Run the build script, its output to `log_path`; the verified binaries, or ControlPlaneError with the log."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log_path.open("wb") as out:
        try:
            result = subprocess.run(
                ["bash", str(BUILD_SCRIPT)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ControlPlaneError(
                f"{BUILD_SCRIPT} did not finish within {timeout:.0f} s; log {log_path}:\n{_tail(log_path)}"
            ) from exc
    if result.returncode != 0:
        raise ControlPlaneError(f"{BUILD_SCRIPT} failed (exit {result.returncode}); log {log_path}:\n{_tail(log_path)}")
    log.info("control plane built in %.0f s (log %s)", time.monotonic() - started, log_path)
    return verify_binaries()


def _tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """The last lines of a log file, or a note why there are none."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(no log: {exc})"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _check_port_free(port: int, component: str) -> None:
    """Raise :class:`PortInUseError` when ``127.0.0.1:port`` cannot be bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUseError(f"port 127.0.0.1:{port} for {component} is already in use") from exc
            raise


def _free_ports(count: int) -> list[int]:
    """Distinct loopback ports that are free right now (all held open until all are chosen)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _openssl(*args: str, cwd: Path) -> None:
    """Run the openssl CLI; raise :class:`ControlPlaneError` with its output when it fails."""
    if shutil.which("openssl") is None:
        raise ControlPlaneError("the openssl command is needed to make the control plane's certificates")
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ControlPlaneError(f"openssl {args[0]} failed: {result.stderr.strip()[-500:]}")


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler on 127.0.0.1.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. Every component logs to
    ``<log_dir>/<component>.log`` (``log_dir`` defaults to the temporary directory, which
    :meth:`stop` removes). The admin token is a secret: it is never logged.
    """

    def __init__(
        self,
        *,
        binaries_dir: Path | None = None,
        apiserver_port: int | None = None,
        etcd_port: int | None = None,
        startup_timeout: float = 90.0,
        log_dir: Path | None = None,
        extra_apiserver_args: Sequence[str] = (),
    ) -> None:
        self._binaries_dir = binaries_dir
        self._requested_ports = {"kube-apiserver": apiserver_port, "etcd": etcd_port}
        self._startup_timeout = startup_timeout
        self._log_dir = log_dir
        self._extra_apiserver_args = list(extra_apiserver_args)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._log_files: list[IO[bytes]] = []
        self._tmpdir: Path | None = None
        self._token: str | None = None
        self._ports: dict[str, int] = {}
        self._atexit_registered = False
        self.startup_seconds: float | None = None
        self.logs: dict[str, Path] = {}

    # ----------------------------------------------------------------- public properties
    @property
    def kubeconfig_path(self) -> Path:
        """The admin kubeconfig (token auth, embedded CA)."""
        return self._require_tmpdir() / "kubeconfig"

    @property
    def ca_path(self) -> Path:
        """The CA certificate the API server's serving certificate chains to."""
        return self._require_tmpdir() / "ca.crt"

    @property
    def server(self) -> str:
        """The API server URL, ``https://127.0.0.1:<port>``."""
        self._require_tmpdir()
        return f"https://127.0.0.1:{self._ports['kube-apiserver']}"

    @property
    def token(self) -> str:
        """The admin bearer token (group system:masters). Do not log it."""
        if self._token is None:
            raise ControlPlaneError("control plane not started")
        return self._token

    @property
    def tmpdir(self) -> Path | None:
        """The temporary directory with certificates, keys, kubeconfig and etcd's data."""
        return self._tmpdir

    @property
    def pids(self) -> dict[str, int]:
        """The PID of every component started so far."""
        return {name: proc.pid for name, proc in self._procs.items()}

    def __repr__(self) -> str:
        state = self.server if self._tmpdir and "kube-apiserver" in self._ports else "stopped"
        return f"<ControlPlane {K8S_VERSION} {state}>"

    # ----------------------------------------------------------------------- lifecycle
    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start all components and wait until the API server is ready and the controllers run."""
        if self._tmpdir is not None:
            raise ControlPlaneError("control plane already started")
        binaries = verify_binaries(self._binaries_dir)
        started = time.monotonic()
        self._procs, self._ports, self.logs, self.startup_seconds = {}, {}, {}, None
        atexit.register(self.stop)
        self._atexit_registered = True
        try:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="clm-control-plane-"))
            self._choose_ports()
            self._write_credentials()
            deadline = started + self._startup_timeout
            self._spawn("etcd", binaries["etcd"], self._etcd_args())
            self._spawn("kube-apiserver", binaries["kube-apiserver"], self._apiserver_args())
            self._wait_for_apiserver(deadline)
            log.debug("kube-apiserver ready after %.1f s", time.monotonic() - started)
            # The controller-manager gives up after 10 s without a healthy API server: start it now.
            self._spawn("kube-controller-manager", binaries["kube-controller-manager"], self._kcm_args())
            self._spawn("kube-scheduler", binaries["kube-scheduler"], self._scheduler_args())
            self._wait_for_health("kube-controller-manager", deadline)
            self._wait_for_health("kube-scheduler", deadline)
            log.debug("controller-manager and scheduler healthy after %.1f s", time.monotonic() - started)
            self._wait_for_default_service_account(deadline)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        log.info("control plane %s ready at %s in %.1f s", K8S_VERSION, self.server, self.startup_seconds)

    def stop(self, grace: float = 5.0) -> None:
        """Terminate every component (SIGTERM, then SIGKILL after ``grace``) and remove the temp dir.

        Safe to call more than once, after a failed start, and when a component has died.
        """
        procs = list(self._procs.values())
        for proc in procs:
            self._signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        for proc in procs:
            # Also SIGKILL the group of an exited leader: nothing of it may stay behind.
            self._signal_group(proc, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        for fh in self._log_files:
            fh.close()
        self._log_files.clear()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        self._tmpdir = None
        self._token = None
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False

    def process_memory(self) -> dict[str, int]:
        """Resident set size in bytes of every running component (from /proc/<pid>/status)."""
        rss: dict[str, int] = {}
        for name, proc in self._procs.items():
            if proc.poll() is not None:
                continue
            try:
                status = Path(f"/proc/{proc.pid}/status").read_text()
            except OSError:
                continue
            match = re.search(r"^VmRSS:\s+(\d+)\s+kB", status, re.MULTILINE)
            if match:
                rss[name] = int(match.group(1)) * 1024
        return rss

    # ------------------------------------------------------------------------ internals
    def _require_tmpdir(self) -> Path:
        if self._tmpdir is None:
            raise ControlPlaneError("control plane not started")
        return self._tmpdir

    def _choose_ports(self) -> None:
        """Pick free loopback ports; explicitly requested ones must be free."""
        for component, port in self._requested_ports.items():
            if port is not None:
                _check_port_free(port, component)
        names = ["etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]
        taken = {p for p in self._requested_ports.values() if p is not None}
        free = iter(p for p in _free_ports(len(names) + len(taken)) if p not in taken)
        for name in names:
            self._ports[name] = self._requested_ports.get(name) or next(free)

    def _write_credentials(self) -> None:
        """CA, API server serving cert, service-account key pair, token file and kubeconfig."""
        tmp = self._require_tmpdir()
        ec = ("-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256")
        for key in ("ca.key", "apiserver.key", "sa.key"):
            _openssl("genpkey", *ec, "-out", key, cwd=tmp)
        _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=tmp)
        _openssl(
            "req", "-x509", "-new", "-key", "ca.key", "-out", "ca.crt", "-days", "3650",
            "-subj", "/CN=clm-sandbox-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            cwd=tmp,
        )  # fmt: skip
        (tmp / "apiserver.ext").write_text(
            "basicConstraints=CA:FALSE\n"
            "keyUsage=critical,digitalSignature,keyEncipherment\n"
            "extendedKeyUsage=serverAuth\n"
            "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,"
            "DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n"
        )
        _openssl("req", "-new", "-key", "apiserver.key", "-out", "apiserver.csr", "-subj", "/CN=apiserver", cwd=tmp)
        _openssl(
            "x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "365", "-extfile", "apiserver.ext", "-out", "apiserver.crt",
            cwd=tmp,
        )  # fmt: skip
        self._token = secrets.token_hex(32)
        token_file = tmp / "tokens.csv"
        token_file.touch(mode=0o600)
        token_file.write_text(f'{self._token},clm-admin,clm-admin,"system:masters"\n')
        ca_data = base64.b64encode((tmp / "ca.crt").read_bytes()).decode()
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "clm-sandbox", "cluster": {
                "server": f"https://127.0.0.1:{self._ports['kube-apiserver']}",
                "certificate-authority-data": ca_data}}],
            "users": [{"name": "clm-admin", "user": {"token": self._token}}],
            "contexts": [{"name": "clm-sandbox", "context": {"cluster": "clm-sandbox", "user": "clm-admin"}}],
            "current-context": "clm-sandbox",
        }  # fmt: skip
        path = tmp / "kubeconfig"
        path.touch(mode=0o600)
        path.write_text(yaml.safe_dump(kubeconfig, sort_keys=False))

    def _etcd_args(self) -> list[str]:
        tmp = self._require_tmpdir()
        client = f"http://127.0.0.1:{self._ports['etcd']}"
        peer = f"http://127.0.0.1:{self._ports['etcd-peer']}"
        return [
            "--name=clm",
            f"--data-dir={tmp / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=clm={peer}",
            "--initial-cluster-state=new",
            "--logger=zap",
            "--log-outputs=stderr",
            "--log-level=warn",
        ]

    def _apiserver_args(self) -> list[str]:
        tmp = self._require_tmpdir()
        return [
            f"--etcd-servers=http://127.0.0.1:{self._ports['etcd']}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self._ports['kube-apiserver']}",
            "--insecure-port=0",
            f"--tls-cert-file={tmp / 'apiserver.crt'}",
            f"--tls-private-key-file={tmp / 'apiserver.key'}",
            f"--token-auth-file={tmp / 'tokens.csv'}",
            "--anonymous-auth=false",
            "--authorization-mode=AlwaysAllow",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={tmp / 'sa.pub'}",
            f"--service-account-signing-key-file={tmp / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            # The default "lease" reconciler would publish 127.0.0.1, which Endpoints refuse.
            "--endpoint-reconciler-type=none",
            "--allow-privileged=true",
            "--profiling=false",
            *self._extra_apiserver_args,
        ]

    def _component_common_args(self, name: str) -> list[str]:
        # No --authentication/authorization-kubeconfig: their own endpoints need no delegated
        # auth (only /healthz, always allowed, is used), and without the API server's
        # request-header CA they would log errors in a loop.
        return [
            f"--kubeconfig={self.kubeconfig_path}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={self._ports[name]}",
            "--port=0",
            "--profiling=false",
        ]

    def _kcm_args(self) -> list[str]:
        tmp = self._require_tmpdir()
        return [
            *self._component_common_args("kube-controller-manager"),
            f"--controllers={CONTROLLERS}",
            f"--service-account-private-key-file={tmp / 'sa.key'}",
            f"--root-ca-file={tmp / 'ca.crt'}",
        ]

    def _scheduler_args(self) -> list[str]:
        return self._component_common_args("kube-scheduler")

    def _spawn(self, name: str, binary: Path, args: list[str]) -> None:
        """Start one component in its own process group, logging to ``<name>.log``."""
        log_dir = self._log_dir or self._require_tmpdir()
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"{name}.log"
        fh = log_path.open("wb")
        self._log_files.append(fh)
        self.logs[name] = log_path
        self._procs[name] = subprocess.Popen(
            [str(binary), *args],
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            cwd=self._require_tmpdir(),
            start_new_session=True,
        )
        log.debug("started %s (pid %d, log %s)", name, self._procs[name].pid, log_path)

    @staticmethod
    def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    def _check_alive(self) -> None:
        """Raise with the log tail of the first component that has exited."""
        for name in _COMPONENT_ORDER:
            proc = self._procs.get(name)
            if proc is None or proc.poll() is None:
                continue
            tail = _tail(self.logs[name])
            port_names = [name, "etcd-peer"] if name == "etcd" else [name]
            ports = ", ".join(f"127.0.0.1:{self._ports[p]}" for p in port_names if p in self._ports)
            if _PORT_IN_USE.search(tail):
                raise PortInUseError(f"{name} could not listen: port already in use ({ports}); log tail:\n{tail}")
            raise ControlPlaneError(f"{name} exited with code {proc.returncode}; log tail:\n{tail}")

    def _get(self, url: str, context: ssl.SSLContext, token: str | None) -> tuple[int, str]:
        request = urllib.request.Request(url)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=2, context=context) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")
        except (OSError, ssl.SSLError) as exc:
            return 0, str(exc)

    def _poll(self, what: str, deadline: float, check: Callable[[], tuple[bool, str]], log_name: str) -> None:
        """Call ``check() -> (done, detail)`` until done, a component dies, or the deadline passes."""
        detail = ""
        while True:
            self._check_alive()
            done, detail = check()
            if done:
                return
            if time.monotonic() >= deadline:
                raise ControlPlaneError(
                    f"{what} not ready within {self._startup_timeout:.0f} s (last: {detail[:500]}); "
                    f"{log_name} log tail:\n{_tail(self.logs[log_name])}"
                )
            time.sleep(0.1)

    def _wait_for_apiserver(self, deadline: float) -> None:
        context = ssl.create_default_context(cafile=str(self.ca_path))
        url = f"{self.server}/readyz"

        def check() -> tuple[bool, str]:
            status, body = self._get(url, context, self.token)
            return status == 200, f"HTTP {status} {body}" if status else body

        self._poll("kube-apiserver /readyz", deadline, check, "kube-apiserver")

    def _wait_for_health(self, name: str, deadline: float) -> None:
        # Self-signed serving certificates made in memory: nothing to verify against.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self._ports[name]}/healthz"

        def check() -> tuple[bool, str]:
            status, body = self._get(url, context, None)
            return status == 200, f"HTTP {status} {body}" if status else body

        self._poll(f"{name} /healthz", deadline, check, name)

    def _wait_for_default_service_account(self, deadline: float) -> None:
        """Wait until default/default has a token Secret: then pods can be created."""
        context = ssl.create_default_context(cafile=str(self.ca_path))
        url = f"{self.server}/api/v1/namespaces/default/serviceaccounts/default"

        def check() -> tuple[bool, str]:
            status, body = self._get(url, context, self.token)
            if status != 200:
                return False, f"HTTP {status}"
            return bool(json.loads(body).get("secrets")), "service account default/default has no token yet"

        self._poll("token for service account default/default", deadline, check, "kube-controller-manager")
