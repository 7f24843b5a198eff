"""The tests' one loopback HTTP server: ``ThreadingHTTPServer`` on 127.0.0.1 (a free port), each request
handed to a ``respond`` function, every request kept in ``requests``. A server we start dies with us: use it
as a context manager (or call ``close``); its threads are daemons. The API scripts on it:
``tests.support.voyage_api`` (the Voyage rerank endpoint) and ``tests.support.messages_api`` (Anthropic's
Messages API); ``tests.bench_costs.ecb_files`` serves files on it.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes
    client_port: int

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Response:
    """``status`` with ``body`` and ``headers`` after ``delay_s``; ``stall_s`` instead: say nothing until the
    client gives up and closes the connection (the event a timeout test waits for; ``stall_s`` only bounds
    the wait, for a client that never gives up), then close it without an answer (a stalled server);
    ``drop``: close the connection at once without an answer (a server that went away mid-request)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    stall_s: float | None = None
    drop: bool = False


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})}
    )


def wait_for_close(conn: socket.socket, limit_s: float) -> None:
    """Until the peer closes ``conn`` (end of stream or a reset), at most ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([conn], [], [], left)
        if not ready:
            continue
        try:
            if not conn.recv(4096):
                return
        except OSError:
            return


class Closing:
    """``close()`` on leaving a ``with`` block (the servers and the API scripts on them)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Loopback(Closing):
    """``respond(request) -> Response``; ``keep_alive`` answers in HTTP/1.1 (persistent connections)."""

    def __init__(self, respond: Callable[[Request], Response], *, keep_alive: bool = False) -> None:
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"
            # TCP_NODELAY: the headers and the body go out in two writes, and on a persistent connection
            # Nagle's algorithm held the body back until the client's delayed ACK (~40 ms a request)
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                request = Request(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                    self.client_address[1],
                )
                with outer.lock:
                    outer.requests.append(request)
                reply = respond(request)
                if reply.drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if reply.stall_s is not None:
                    wait_for_close(self.connection, reply.stall_s)
                    self.close_connection = True
                    return
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # ``close`` waits for the serving loop to notice the shutdown: it looks every 20 ms, not every 0.5 s
        # (serve_forever's default), which each test's teardown used to wait out
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


class OnLoopback(Closing):
    """Base of the API scripts that answer on a :class:`Loopback` (``self.server``): closing one, directly or
    as a context manager, shuts its server down."""

    server: Loopback

    def close(self) -> None:
        self.server.close()
