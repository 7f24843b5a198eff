"""One judgment of one pair by the LLM judge (plan section "Judged sample of unjudged passages").

The official ``anthropic`` client, built with ``max_retries=0`` so that every HTTP attempt is ours and is
recorded: a fresh single-message conversation per pair (no earlier pair in the context), the fixed prompt
``bench/judged/prompt.txt`` (its SHA-256 recorded), ``MAX_TOKENS`` and ``THINKING`` fixed. The
temperature cannot be set through this client version (``TEMPERATURE_NOTE``); that is recorded
(deviation D-031).

Parsing is strict: one text block, a normal stop, and after stripping surrounding white space exactly
``1``, ``0`` or ``unclear``. Anything else is a parse failure: recorded with the answer, retried up to
``PARSE_ATTEMPTS`` times, and if it persists the pair is counted as a parse failure, apart from "unclear"
and never turned into a label.

Retried with exponential backoff (``BACKOFF_BASE_S`` doubling, at most ``BACKOFF_CAP_S``, at least a
``retry-after`` header's seconds): 429, 408, 5xx including 529 (overloaded), timeouts and connection
errors, ``HTTP_ATTEMPTS`` tries per pair in all; then the run stops with a one-line error and the pair is
redone on resume. 404 (e.g. an unknown model id), 401/403 and other 4xx stop the run at once. Every attempt
is recorded (outcome, HTTP status, request id, tokens, wait, time); the API key never is.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from bench.core import backoff, clock
from bench.core.errors import BenchError
from bench.core.hints import hint as command_hint

# anthropic 2.10.0's Messages.create has no sampling parameters (temperature, top_p, top_k): the model's
# fixed default sampling is used and recorded as such. Extended thinking is switched off explicitly.
TEMPERATURE: float | None = None
TEMPERATURE_NOTE = "not settable: anthropic 2.10.0 Messages API has no sampling parameters (server default)"
THINKING = {"type": "disabled"}
MAX_TOKENS = 16
TIMEOUT_S = 120.0
HTTP_ATTEMPTS = 6
PARSE_ATTEMPTS = 3
BACKOFF_BASE_S = 2.0
BACKOFF_CAP_S = 60.0
LABELS: dict[str, int | str] = {"1": 1, "0": 0, "unclear": "unclear"}
RETRIED_STATUS = (408, 429)  # and every status >= 500 (529: overloaded)
_PLACEHOLDER = re.compile(r"\{\{(query|passage)\}\}")


def render(template: str, query: str, passage: str) -> str:
    """The prompt with ``{{query}}`` and ``{{passage}}`` filled in one pass (texts are never re-scanned)."""
    values = {"query": query, "passage": passage}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def check_template(template: str, path: str) -> None:
    found = sorted(_PLACEHOLDER.findall(template))
    if found != ["passage", "query"]:
        raise BenchError(f"{path}: the prompt needs {{{{query}}}} and {{{{passage}}}} exactly once each")


def parse_answer(message: Any) -> tuple[int | str | None, str]:
    """(label or None for a parse failure, the answer text as received)."""
    blocks = list(getattr(message, "content", None) or [])
    texts = [getattr(b, "text", None) for b in blocks if getattr(b, "type", None) == "text"]
    raw = "".join(t for t in texts if isinstance(t, str))
    if (
        len(blocks) != 1
        or len(texts) != 1
        or getattr(message, "stop_reason", None) not in ("end_turn", "stop_sequence")
    ):
        return None, raw
    return LABELS.get(raw.strip()), raw


def backoff_s(failures: int, retry_after: float | None) -> float:
    """The judge's wait (``bench.core.backoff.backoff_s`` with its base and cap; retry-after honoured in
    full)."""
    return backoff.backoff_s(failures, base_s=BACKOFF_BASE_S, cap_s=BACKOFF_CAP_S, retry_after=retry_after)


class JudgeStopped(BenchError):
    """The run stops (retries used up, or an answer that retrying cannot change); the journal stays valid."""


class Judge:
    """Asks ``model`` about one pair at a time through ``client`` (an ``anthropic.Anthropic``)."""

    def __init__(
        self,
        client: Any,
        model: str,
        template: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        on_attempt: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.template = template
        self.sleep = sleep
        self.on_attempt = on_attempt

    def settings(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "temperature": TEMPERATURE,
            "temperature_note": TEMPERATURE_NOTE,
            "thinking": dict(THINKING),
            "max_tokens": MAX_TOKENS,
            "http_attempts": HTTP_ATTEMPTS,
            "parse_attempts": PARSE_ATTEMPTS,
            "backoff": f"min({BACKOFF_CAP_S}, {BACKOFF_BASE_S} * 2**(failures - 1)), >= retry-after",
            "retried": "HTTP 408, 429, >= 500 (529 overloaded), timeouts, connection errors",
            "conversation": "one user message per pair, no earlier pairs",
        }

    def _record(self, attempt: dict[str, Any], attempts: list[dict[str, Any]]) -> None:
        attempts.append(attempt)
        if self.on_attempt is not None:
            self.on_attempt(attempt)

    def judge(self, pair: int, query: str, passage: str) -> dict[str, Any]:
        """The journal fields of one pair: status ``labelled`` (label 1, 0 or "unclear") or
        ``parse-failure`` (label None), the answering attempt's request id and tokens, every attempt."""
        content = render(self.template, query, passage)
        attempts: list[dict[str, Any]] = []
        transient = malformed = 0
        while True:
            attempt, label = self._attempt(pair, content, attempts)
            if attempt["outcome"] in ("answer", "malformed"):
                self._record(attempt, attempts)
                if label is not None:
                    return self._result("labelled", label, attempt, attempts)
                malformed += 1
                if malformed >= PARSE_ATTEMPTS:
                    return self._result("parse-failure", None, attempt, attempts)
                continue
            transient += 1
            if transient >= HTTP_ATTEMPTS:
                self._record({**attempt, "wait_s": None}, attempts)
                raise JudgeStopped(
                    f"pair {pair}: {HTTP_ATTEMPTS} attempts failed (last: {attempt['outcome']} "
                    f"{attempt['http_status'] or ''} {attempt['error']}); the journal is intact, rerun "
                    f"`{command_hint('judged run')}` later to resume"
                )
            hint = attempt["retry_after_s"]
            wait = backoff_s(transient, hint if isinstance(hint, float) else None)
            self._record({**attempt, "wait_s": wait}, attempts)
            self.sleep(wait)

    def _attempt(
        self, pair: int, content: str, attempts: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], int | str | None]:
        """One request: its attempt record and the answer's label (None: no answer, or not one of the labels).
        A failure that may pass is returned for a retry; one that retrying cannot change is recorded and
        raised as ``JudgeStopped``."""
        # lazy: the anthropic client is heavy and needed only for judged calls
        import anthropic

        base = {"pair": pair, "attempt": len(attempts) + 1, "utc": clock.utc_z("microseconds")}
        t0 = time.perf_counter_ns()
        try:
            message = self.client.messages.create(
                model=self.model,
                max_tokens=MAX_TOKENS,
                thinking=THINKING,
                messages=[{"role": "user", "content": content}],
            )
        except anthropic.APIStatusError as exc:
            status = exc.status_code
            after = backoff.retry_after_s(exc.response.headers.get("retry-after"))
            error = f"{exc.type or ''}: {exc.api_message or exc.message}".strip(": ")
            attempt = _failed(base, "http-error", status, exc.request_id, error, after, t0)
            if status not in RETRIED_STATUS and status < 500:
                self._record({**attempt, "wait_s": None}, attempts)
                raise JudgeStopped(self._fatal(status, error)) from None
            return attempt, None
        except anthropic.APITimeoutError:
            return _failed(base, "timeout", None, None, "request timed out", None, t0), None
        except anthropic.APIConnectionError as exc:
            return _failed(base, "connection-error", None, None, str(exc), None, t0), None
        latency = time.perf_counter_ns() - t0
        label, raw = parse_answer(message)
        usage = getattr(message, "usage", None)
        attempt = {
            **base,
            "outcome": "answer" if label is not None else "malformed",
            "http_status": 200,
            "request_id": getattr(message, "_request_id", None),
            "answer": raw,
            "stop_reason": getattr(message, "stop_reason", None),
            "input_tokens": getattr(usage, "input_tokens", None),
            "output_tokens": getattr(usage, "output_tokens", None),
            "latency_ns": latency,
            "wait_s": None,
        }
        return attempt, label

    def _fatal(self, status: int, error: str) -> str:
        if status == 404:
            return f"the Anthropic API does not know model {self.model!r} (HTTP 404: {error}); check --model"
        if status in (401, 403):
            return f"the Anthropic API refused the key (HTTP {status}: {error}); check ANTHROPIC_API_KEY"
        return f"the Anthropic API refused the request (HTTP {status}: {error})"

    @staticmethod
    def _result(
        status: str, label: int | str | None, last: dict[str, Any], attempts: list[dict[str, Any]]
    ) -> dict[str, Any]:
        answered = [a for a in attempts if a["http_status"] == 200]
        return {
            "status": status,
            "label": label,
            "answer": last["answer"],
            "request_id": last["request_id"],
            "input_tokens": last["input_tokens"],
            "output_tokens": last["output_tokens"],
            "latency_ns": last["latency_ns"],
            "billed_input_tokens": sum(a["input_tokens"] or 0 for a in answered),
            "billed_output_tokens": sum(a["output_tokens"] or 0 for a in answered),
            "attempts": attempts,
        }


def _failed(
    base: dict[str, Any],
    outcome: str,
    status: int | None,
    request_id: str | None,
    error: str,
    retry_after: float | None,
    t0: int,
) -> dict[str, Any]:
    """The record of an attempt that got no answer (its wait is added when it is known)."""
    return {
        **base,
        "outcome": outcome,
        "http_status": status,
        "request_id": request_id,
        "error": error,
        "retry_after_s": retry_after,
        "latency_ns": time.perf_counter_ns() - t0,
    }
