"""A loopback HTTP server speaking the Voyage rerank endpoint's JSON, with scripted delays, 429 with
Retry-After and 5xx answers (real response shapes: ``data`` sorted by score, ``usage.total_tokens``)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def answer(payload: dict[str, Any]) -> bytes:
    docs = payload["documents"]
    items = [{"index": i, "relevance_score": 1.0 / (1 + i)} for i in range(len(docs))]  # first-stage order
    items.sort(key=lambda it: -it["relevance_score"])
    tokens = sum(len(d.split()) for d in docs) + len(docs) * len(payload["query"].split())
    body = {"object": "list", "data": items, "model": payload["model"], "usage": {"total_tokens": tokens}}
    return json.dumps(body).encode()


class Server:
    def __init__(self) -> None:
        self.script: dict[str, list[Reply]] = {}  # query text -> replies for its attempts, in order
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                outer.requests.append(payload)
                queue = outer.script.get(payload["query"], [])
                reply = queue.pop(0) if queue else Reply()
                time.sleep(reply.delay_s)
                body = answer(payload) if reply.status == 200 else b'{"detail": "scripted error"}'
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@contextmanager
def voyage_server() -> Iterator[Server]:
    server = Server()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
