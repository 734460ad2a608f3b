"""An API server that becomes unreachable on demand, for fault tests, without touching the shared control plane."""

from __future__ import annotations

import socket
import threading
from contextlib import suppress
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit


class ApiServerDoor:
    """The API server behind a door: a TCP forwarder on a loopback port of its own that a test closes (new
    connections refused, open ones cut) and opens again. The shared control plane itself is never touched."""

    def __init__(self, upstream: str):
        address = urlsplit(upstream)
        self._upstream = (address.hostname or "127.0.0.1", address.port or 443)
        self._listener: socket.socket | None = None
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.port = 0

    @property
    def server(self) -> str:
        """The API server's URL through the door."""
        return f"https://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def open(self) -> None:
        """Accept connections (on the same port as before) and forward them to the API server."""
        if self._listener is not None:
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.1)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name=f"door-{self.port}", daemon=True).start()

    def close(self) -> None:
        """Refuse new connections and cut the open ones."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            connections, self._connections = self._connections, set()
        for connection in connections:
            with suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()

    def _accept(self, listener: socket.socket) -> None:
        while self._listener is listener:
            try:
                downstream, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed
                return
            try:
                upstream = socket.create_connection(self._upstream, timeout=5)
            except OSError:
                downstream.close()
                continue
            with self._lock:
                if self._listener is not listener:  # closed meanwhile
                    for end in (downstream, upstream):
                        end.close()
                    return
                self._connections |= {downstream, upstream}
            for end in (downstream, upstream):
                end.settimeout(None)  # idle connections (watches) stay open
            for source, target in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        """Copy one direction until either end closes; shut both down (the other direction ends too), close the
        source."""
        with suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        for end in (source, target):
            with suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
        with self._lock:
            self._connections.discard(source)
        source.close()
