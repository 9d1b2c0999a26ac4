"""A threaded HTTP/1.1 server on a loopback address that hands each request to an `App`.

It keeps connections alive like GitHub does, and it can stop at any moment: sleeps in handlers
wait on `stopping`, and open keep-alive sockets are shut so that no handler thread outlives
`stop()`.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .http_types import Request, Response

App = Callable[[Request], Response]
_CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


class _Server(ThreadingHTTPServer):
    # Handler threads are joined on close (not daemons) so a test never leaks one.
    daemon_threads = False
    block_on_close = True

    def __init__(self, address: tuple[str, int], app: App, stopping: threading.Event) -> None:
        super().__init__(address, _Handler)
        self.app = app
        self.stopping = stopping
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up between requests (the tests drop connections on purpose) is
        # how HTTP goes, not a bug of the fake: say nothing. Anything else is printed as usual.
        if isinstance(sys.exc_info()[1], _CLIENT_GONE):
            return
        super().handle_error(request, client_address)

    def shut_open_connections(self) -> None:
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):  # already closed by the client
                sock.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 30  # idle keep-alive connections end on their own after this
    # Headers and body leave in separate writes; with Nagle on, the body waits ~40 ms for
    # the client's delayed ACK of the headers on every keep-alive request.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def version_string(self) -> str:
        return "GitHub.com"

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the fake keeps its own request log in State."""

    def _serve(self) -> None:
        try:
            response = self.server.app(self._read_request())
            self._write(response)
        except _CLIENT_GONE:
            self.close_connection = True  # the client timed out or hung up; nothing to answer

    def _read_request(self) -> Request:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        return Request(self.command, path, query, list(self.headers.items()), body)

    def _write(self, response: Response) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if response.trickle is None:
            self.wfile.write(response.body)
            return
        step = max(1, response.trickle.chunk_size)
        for start in range(0, len(response.body), step):
            self.wfile.write(response.body[start : start + step])
            self.wfile.flush()
            if self.server.stopping.wait(response.trickle.pause):
                self.close_connection = True
                return


class LoopbackServer:
    """Serve `app` on `host` at an ephemeral port, in a background thread."""

    def __init__(self, app: App, host: str, stopping: threading.Event) -> None:
        self._server = _Server((host, 0), app, stopping)
        self._stopping = stopping
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},  # shutdown() waits up to one poll interval
            name=f"fakegithub-{host}:{self.port}",
            daemon=True,
        )

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.shut_open_connections()
        self._server.server_close()  # joins every handler thread
        self._thread.join()


def bindable(host: str) -> bool:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((host, 0))
        return True
    except OSError:
        return False
