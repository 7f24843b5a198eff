"""Enough of Anthropic's Messages API for the real ``anthropic`` client, on the tests' loopback server
(``tests.support.loopback``).

``POST /v1/messages`` answers from a script, one step per request, then a default step (an answer "1"):

* ``("answer", text)``: 200 with a message holding one text block, ``stop_reason`` "end_turn", usage and a
  ``request-id`` header;
* ``("status", code, headers)``: that status with an Anthropic error body;
* ``("stall", seconds)``: accept the request and say nothing until the client gives up (at most ``seconds``),
  then close.

Every request's JSON body and headers are kept in ``requests`` (``path``, ``body``, ``headers``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from tests.support.loopback import Loopback, OnLoopback, Request, Response, json_response

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class MessagesServer(OnLoopback):
    def __init__(
        self, script: Iterable[tuple[Any, ...]] = (), default: tuple[Any, ...] = ("answer", "1")
    ) -> None:
        self.script = list(script)
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.server = Loopback(self._respond)

    def _respond(self, request: Request) -> Response:
        body = request.json()
        with self.lock:
            self.requests.append({"path": request.path, "body": body, "headers": request.headers})
            n = len(self.requests)
            step = self.script.pop(0) if self.script else self.default
        if request.path != "/v1/messages":
            return json_response(
                404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}}
            )
        kind = step[0]
        if kind == "stall":
            return Response(stall_s=float(step[1]))
        if kind == "status":
            code, headers = step[1], step[2] if len(step) > 2 else {}
            err = {"type": ERROR_TYPES.get(code, "api_error"), "message": f"scripted {code}"}
            return json_response(
                code, {"type": "error", "error": err}, {"request-id": f"req_err_{n}", **headers}
            )
        msg = {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": step[1]}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 100 + n, "output_tokens": 1},
        }
        return json_response(200, msg, {"request-id": f"req_{n}"})

    @property
    def url(self) -> str:
        return self.server.url
