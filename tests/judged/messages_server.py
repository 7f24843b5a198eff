"""A loopback HTTP server that speaks enough of Anthropic's Messages API for the real ``anthropic`` client.

``POST /v1/messages`` answers from a script, one step per request, then a default step (an answer "1"):

* ``("answer", text)``: 200 with a message holding one text block, ``stop_reason`` "end_turn", usage and a
  ``request-id`` header;
* ``("status", code, headers)``: that status with an Anthropic error body;
* ``("stall", seconds)``: accept the request and say nothing for ``seconds`` (bounded), then close.

Every request's JSON body and headers are kept in ``requests``. Loopback only; the server thread is a
daemon and ``close`` shuts it down.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class MessagesServer:
    def __init__(
        self, script: Iterable[tuple[Any, ...]] = (), default: tuple[Any, ...] = ("answer", "1")
    ) -> None:
        self.script = list(script)
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                with outer.lock:
                    outer.requests.append(
                        {
                            "path": self.path,
                            "body": body,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                        }
                    )
                    n = len(outer.requests)
                    step = outer.script.pop(0) if outer.script else outer.default
                if self.path != "/v1/messages":
                    self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}})
                    return
                kind = step[0]
                if kind == "stall":
                    time.sleep(float(step[1]))
                    self.close_connection = True
                    return
                if kind == "status":
                    code, headers = step[1], step[2] if len(step) > 2 else {}
                    err = {"type": ERROR_TYPES.get(code, "api_error"), "message": f"scripted {code}"}
                    self._send(
                        code, {"type": "error", "error": err}, {"request-id": f"req_err_{n}", **headers}
                    )
                    return
                text = step[1]
                msg = {
                    "id": f"msg_{n}", "type": "message", "role": "assistant", "model": body["model"],
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                    "stop_sequence": None, "usage": {"input_tokens": 100 + n, "output_tokens": 1},
                }  # fmt: skip
                self._send(200, msg, {"request-id": f"req_{n}"})

            def _send(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
