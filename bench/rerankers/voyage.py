"""Voyage rerank API adapter (plan: Rerankers, voyage-rerank-3 and voyage-rerank-3-lite; Adapter checks 3).

POST ``{base_url}/rerank`` with ``{"model", "query", "documents", "truncation": true,
"return_documents": false}`` (``top_k`` only when asked for). The answer is ``{"object": "list",
"data": [{"index", "relevance_score"}], "model", "usage": {"total_tokens"}}`` with ``data`` sorted by
score, so scores are put back by ``index`` into first-stage order. One persistent ``httpx.Client`` per
adapter; explicit retries on 429, 5xx, timeouts, transport errors and malformed bodies, honouring
``Retry-After``; every attempt is recorded (status, duration in s and ns, Retry-After, seconds waited; a
successful attempt also ``parsed_ns``: request sent to response parsed, the latency phase's API time).
The API key comes from ``VOYAGE_API_KEY`` or a ``.env`` file and is never written anywhere: every error
text passes through ``_redact`` first.
"""

from __future__ import annotations

import functools
import json
import os
import ssl
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.core import backoff, clock, paths
from bench.core.errors import BenchError
from bench.core.plan import RERANKERS, VOYAGE_RETURN_DOCUMENTS, VOYAGE_TRUNCATION
from bench.rerankers.protocol import (
    ModelUnavailable,
    RecordLog,
    RerankerMeta,
    ScoreResult,
    make_result,
    package_versions,
)

DEFAULT_BASE_URL = "https://api.voyageai.com/v1"
BASE_URL_ENV = "VOYAGE_BASE_URL"
KEY_ENV = "VOYAGE_API_KEY"
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
TOKENS_UNMEASURED = (
    "Voyage truncates server-side (truncation: true) and reports only the billed total per request, not the "
    "tokens of each pair or which pairs were cut"
)


class VoyageError(BenchError):
    """The API call failed for good; ``attempts`` holds every attempt's record (no key in it).
    ``transient``: every attempt failed for a reason that may pass (429, 5xx, timeouts, malformed bodies),
    so a later resume may try the query again."""

    def __init__(self, message: str, attempts: list[dict[str, Any]], *, transient: bool = False) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.transient = transient


class VoyageRefused(VoyageError, ModelUnavailable):
    """401, 403, or an answer naming an unknown model: no query of this model can succeed now."""


def refuses_model(status: int, text: str) -> bool:
    """Statuses after which calling the model again is pointless: bad key, no access, unknown model."""
    return status in (401, 403) or (status in (400, 404, 422) and "model" in text.lower())


def base_url_from_env(*, env: dict[str, str] | None = None) -> str:
    """The endpoint every Voyage phase calls: ``VOYAGE_BASE_URL`` when set (a loopback test server), else
    Voyage's own. One rule for check-adapters, quality and latency api, so that no phase calls another
    endpoint than the rest; the endpoint used is recorded with every result."""
    source = os.environ if env is None else env
    return source.get(BASE_URL_ENV, "").strip() or DEFAULT_BASE_URL


def read_api_key(*, env: dict[str, str] | None = None, dotenv: Path | None = None) -> str:
    """``VOYAGE_API_KEY`` from the environment, else from ``dotenv`` (default: ``.env`` at the repo root)."""
    source = os.environ if env is None else env
    key = source.get(KEY_ENV, "").strip()
    if key:
        return key
    if dotenv is None:
        dotenv = paths.repo_root() / ".env"
    if dotenv.is_file():
        try:
            text = dotenv.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise BenchError(
                f"{dotenv}: not UTF-8 text ({exc.reason} at byte {exc.start}). Fix: write the "
                f"file again as UTF-8, with a line `{KEY_ENV}=...`"
            ) from None
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if line.startswith("export "):
                line = line[len("export ") :].strip()
            name, sep, value = line.partition("=")
            if sep and name.strip() == KEY_ENV:
                value = value.strip().strip("'\"")
                if value and (not value.strip() or any(c.isspace() for c in value)):
                    raise BenchError(
                        f"{dotenv}:{number}: {KEY_ENV} holds whitespace, not a key (an API key "
                        "has none). Fix: put the key itself after the ="
                    )
                if value:
                    return value
    raise BenchError(
        f"No Voyage API key: set {KEY_ENV} in the environment or put `{KEY_ENV}=...` into {dotenv} "
        "(git-ignored). The key is never written to any file or log."
    )


def parse_response(body: bytes, n: int) -> tuple[np.ndarray, int]:
    """Scores in input order (float64) and billed tokens; ValueError on any deviation from the schema."""
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"response is not JSON: {exc}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        raise ValueError("response has no `data` list")
    usage = payload.get("usage")
    tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
        raise ValueError("response has no integer `usage.total_tokens`")
    scores = np.full(n, np.nan, dtype=np.float64)
    for item in payload["data"]:
        idx = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if not isinstance(idx, int) or isinstance(idx, bool) or not 0 <= idx < n:
            raise ValueError(f"bad `index` {idx!r} for {n} documents")
        if not isinstance(score, (int, float)) or isinstance(score, bool) or not np.isfinite(score):
            raise ValueError(f"bad `relevance_score` {score!r} at index {idx}")
        if not np.isnan(scores[idx]):
            raise ValueError(f"index {idx} returned twice")
        scores[idx] = float(score)
    missing = int(np.isnan(scores).sum())
    if missing:
        raise ValueError(f"{missing} of {n} documents have no score in the response")
    return scores, tokens


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for every Voyage client of the process, as httpx makes it by default (the CA bundle of
    ``SSL_CERT_FILE``, ``SSL_CERT_DIR`` or certifi): httpx builds and loads one per client otherwise, 0.05 to
    0.2 s each, and `bench quality` makes a client per Voyage model (as bench.firststage.server does)."""
    return httpx.create_ssl_context()


class VoyageReranker:
    """The ``Reranker`` protocol over the Voyage rerank endpoint; a context manager (or call ``close``)."""

    def __init__(
        self,
        model_id: str,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        max_attempts: int = 6,
        timeout_s: float = 60.0,
        connect_timeout_s: float = 10.0,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        max_wait_s: float = 600.0,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        plan = RERANKERS.get(model_id)
        if plan is None or plan.implementation != "voyage-api":
            raise BenchError(
                f"{model_id!r} is not a Voyage model of the plan (voyage-rerank-3, voyage-rerank-3-lite)"
            )
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self._key = api_key if api_key is not None else read_api_key()
        self.model_id = model_id
        self.api_model = plan.model
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_wait_s = max_wait_s
        self._sleep = sleep
        self.measurement_date = clock.today().isoformat()
        self.calls: list[dict[str, Any]] = []  # one API record per score() call, attempts included
        self.log = RecordLog()
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {self._key}", "Content-Type": "application/json"},
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            transport=transport,
            verify=tls_context(),
        )
        self._meta = RerankerMeta(
            id=model_id,
            model=plan.model,
            revision=None,
            dtype="api",
            device="api",
            chunk_size=None,
            listwise=False,  # check 3 decides whether scores count as pointwise
            implementation=plan.implementation,
            packages=package_versions(("httpx", "numpy")),
            extra={
                "endpoint": f"{base_url.rstrip('/')}/rerank",
                "measurement_date": self.measurement_date,
                "truncation": VOYAGE_TRUNCATION,
                "return_documents": VOYAGE_RETURN_DOCUMENTS,
            },
        )

    @property
    def meta(self) -> RerankerMeta:
        return self._meta

    def __enter__(self) -> VoyageReranker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "[REDACTED]") if self._key else text

    def score(self, query: str, passages: Sequence[str], *, top_k: int | None = None) -> ScoreResult:
        passages = list(passages)
        if not passages:
            return self.log.add(make_result([], max_input_tokens=0, truncated_pairs=0, chunk_size=0))
        body: dict[str, Any] = {
            "model": self.api_model,
            "query": query,
            "documents": passages,
            "truncation": VOYAGE_TRUNCATION,
            "return_documents": VOYAGE_RETURN_DOCUMENTS,
        }
        if top_k is not None:
            body["top_k"] = top_k
        scores, tokens, attempts, seconds = self._post(body, len(passages))
        self.calls.append(
            {
                "model": self.api_model,
                "n": len(passages),
                "billed_tokens": tokens,
                "http_seconds": seconds,
                "attempts": attempts,
                "measurement_date": self.measurement_date,
            }
        )
        # Server-side truncation: the real input's token counts are not visible; null with the reason, not 0.
        result = make_result(
            scores,
            max_input_tokens=None,
            truncated_pairs=None,
            chunk_size=len(passages),
            tokens_unmeasured=TOKENS_UNMEASURED,
        )
        return self.log.add(result)

    def _post(self, body: dict[str, Any], n: int) -> tuple[np.ndarray, int, list[dict[str, Any]], float]:
        attempts: list[dict[str, Any]] = []
        for number in range(1, self.max_attempts + 1):
            rec: dict[str, Any] = {
                "attempt": number,
                "utc": clock.utc_iso("milliseconds"),
                "status": None,
                "error": None,
                "retry_after_s": None,
                "waited_s": 0.0,
            }
            attempts.append(rec)
            start = time.perf_counter_ns()
            retry_after: float | None = None
            try:
                response = self._client.post("/rerank", json=body)
                rec["duration_ns"] = time.perf_counter_ns() - start
                rec["duration_s"] = rec["duration_ns"] / 1e9
                rec["status"] = response.status_code
                if response.status_code == 200:
                    try:
                        scores, tokens = parse_response(response.content, n)
                    except ValueError as exc:
                        rec["error"] = self._redact(f"malformed body: {exc}")
                    else:
                        rec["parsed_ns"] = time.perf_counter_ns() - start  # request sent to response parsed
                        return scores, tokens, attempts, rec["duration_s"]
                elif response.status_code in RETRY_STATUS:
                    retry_after = backoff.retry_after_s(response.headers.get("Retry-After"))
                    rec["retry_after_s"] = retry_after
                    rec["error"] = self._redact(f"HTTP {response.status_code}: {response.text[:300]}")
                else:
                    rec["error"] = self._redact(f"HTTP {response.status_code}: {response.text[:300]}")
                    refused = refuses_model(response.status_code, response.text)
                    raise (VoyageRefused if refused else VoyageError)(
                        f"Voyage API refused the request ({rec['error']}); not retried. "
                        "Check the model name and the API key.",
                        attempts,
                    )
            except httpx.HTTPError as exc:  # timeouts and transport errors: retried
                rec["duration_ns"] = time.perf_counter_ns() - start
                rec["duration_s"] = rec["duration_ns"] / 1e9
                rec["error"] = self._redact(f"{type(exc).__name__}: {exc}")
            if number == self.max_attempts:
                break
            wait = backoff.backoff_s(
                number,
                base_s=self.backoff_s,
                cap_s=self.max_backoff_s,
                retry_after=retry_after,  # honoured in full up to max_wait_s (a guard against absurd values)
                max_wait_s=self.max_wait_s,
            )
            rec["waited_s"] = wait
            self._sleep(wait)
        last = attempts[-1]["error"]
        raise VoyageError(
            f"Voyage API failed after {len(attempts)} attempts; last error: {last} (all attempts recorded).",
            attempts,
            transient=True,
        )
