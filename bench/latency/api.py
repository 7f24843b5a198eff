"""``bench latency api``: the Voyage rerank API (plan section "Latency": from the desktop, 305 queries,
k = 20 and 100, at three times of day; full HTTP time; TCP connect time to the endpoint as baseline; billed
tokens per k without warm-up; the account's training opt-out status recorded with every result).

Per call: the latency of a query is its successful attempt, from request sent to response parsed
(``parsed_ns`` of ``bench.rerankers.voyage``); every attempt is kept (status, ns, Retry-After, wait), and a
query needing more than one attempt counts as retried. A query that fails for good (retries exhausted) has
no latency: its sample has ``ns`` null and the error. A refusal that retrying cannot fix (4xx other than
429: a rejected model name, a bad key) stops the run with the API's message.

One session per run: ``<UTC start>-<time-of-day label>`` under ``results/latency/published/api/``, so the
plan's three sessions are three folders; ``--session`` continues an interrupted one.
"""

from __future__ import annotations

import datetime as dt
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from analysis.latency import Attempt, Sample
from bench.core import clock
from bench.core.errors import BenchError
from bench.core.plan import SEED
from bench.latency.accuracy import read_reference, reference_path
from bench.latency.harness import BlockSpec, Call, Environment, Observation, run_block
from bench.latency.order import seeded_order
from bench.latency.run import block_calls
from bench.latency.telemetry import Sampler, host_probes
from bench.rerankers.voyage import RETRY_STATUS, VoyageError

CONNECT_SAMPLES = 5
OPT_OUT_CHOICES = ("yes", "no")


def time_of_day(utc: dt.datetime) -> str:
    """A default label from the UTC hour (the author may pass their own with --time-of-day)."""
    h = utc.hour
    if 5 <= h < 11:
        return "morning-utc"
    if 11 <= h < 17:
        return "afternoon-utc"
    if 17 <= h < 23:
        return "evening-utc"
    return "night-utc"


def require_opt_out(value: str | None) -> str:
    if value not in OPT_OUT_CHOICES:
        raise BenchError(
            "--training-opt-out is required (yes|no): state whether the Voyage account has opted out of "
            "training on API data; it is recorded with every result and has no default."
        )
    return value


def connect_ns(base_url: str, n: int = CONNECT_SAMPLES, timeout_s: float = 10.0) -> list[int | None]:
    """TCP connect time to the endpoint's host and port, ``n`` times (None for a failed connect)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    out: list[int | None] = []
    for _ in range(n):
        start = time.perf_counter_ns()
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                out.append(time.perf_counter_ns() - start)
        except OSError:
            out.append(None)
    return out


def _attempts(raw: Sequence[Mapping[str, Any]]) -> tuple[Attempt, ...]:
    return tuple(
        Attempt(
            attempt=int(a["attempt"]),
            status=a.get("status"),
            ns=a.get("parsed_ns", a.get("duration_ns")),
            error=a.get("error"),
            retry_after_s=a.get("retry_after_s"),
            waited_s=float(a.get("waited_s") or 0.0),
        )
        for a in raw
    )


class ApiCaller:
    timer = (
        "per query: the successful attempt, time.perf_counter_ns from the request sent (httpx post) to the "
        "response parsed; every attempt kept"
    )

    def __init__(self, voyage: Any) -> None:
        self._voyage = voyage
        self.reranker: Mapping[str, Any] | None = voyage.meta.to_dict()

    def __call__(self, call: Call, *, k: int, pass_: int) -> Observation:
        try:
            result = self._voyage.score(call.query, list(call.passages))
        except VoyageError as exc:
            last = exc.attempts[-1] if exc.attempts else {}
            status = last.get("status")
            if status is not None and status != 200 and status not in RETRY_STATUS:
                raise  # not fixable by retrying: the run stops with the API's message
            attempts = _attempts(exc.attempts)
            sample = Sample(
                query_id=call.query_id,
                k=k,
                pass_=pass_,
                ns=None,
                n_passages=len(call.passages),
                attempts=attempts,
                retried=len(attempts) > 1,
                error=exc.message,
            )
            return Observation(sample, None)
        rec = self._voyage.calls[-1]
        attempts = _attempts(rec["attempts"])
        ns = rec["attempts"][-1].get("parsed_ns")
        if ns is None:
            raise BenchError("the Voyage adapter recorded no parsed_ns for a successful attempt")
        sample = Sample(
            query_id=call.query_id,
            k=k,
            pass_=pass_,
            ns=int(ns),
            n_passages=len(call.passages),
            chunk_size=None,
            attempts=attempts,
            retried=len(attempts) > 1,
            billed_tokens=int(rec["billed_tokens"]),
        )
        return Observation(sample, result.scores)


@dataclass(frozen=True)
class ApiSession:
    session: str
    utc: str
    label: str
    opt_out: str
    endpoint: str


def new_session(opt_out: str, endpoint: str, label: str | None, session: str | None) -> ApiSession:
    now = clock.now()
    label = label or time_of_day(now)
    name = session or f"{clock.stamp(now, seconds=False)}-{label}"
    return ApiSession(name, clock.utc_iso(when=now), label, opt_out, endpoint)


def api_facts(s: ApiSession, connect: list[int | None]) -> dict[str, Any]:
    return {
        "endpoint": s.endpoint,
        "session_utc": s.utc,
        "time_of_day": s.label,
        "training_opt_out": s.opt_out,
        "connect_ns": connect,
        "connect_note": "TCP connect (no TLS) to the endpoint's host and port, measured before the block",
    }


def measure_api(
    models: list[str],
    depths: tuple[int, ...],
    inputs: Any,
    session: ApiSession,
    *,
    out_root: Path,
    runs_dir: Path | None,
    stage: str,
    manifest: Mapping[str, Any],
    make_reranker: Any,
    allow_busy: bool = False,
    unrated: Mapping[str, str] | None = None,
    stream: TextIO | None = None,
    host: Any = None,
) -> list[Any]:
    """Every (model, k) block of one API session; no warm-up (billed tokens per k from the first call)."""
    stream = stream if stream is not None else sys.stderr
    unrated = unrated or {}
    order = seeded_order(list(inputs.queries), SEED)
    blocks = []
    for model in models:
        voyage = make_reranker(model)
        try:
            caller = ApiCaller(voyage)
            for k in depths:
                spec = _block_spec(model, k, unrated.get(model), inputs, order, session, manifest, allow_busy)
                env = _environment(model, k, out_root, runs_dir, stage, manifest, stream, host)
                block, measured = run_block(spec, caller, env)
                verb = "measured" if measured else "already measured, kept"
                print(f"latency: {model} k={k}: {verb} ({spec.relpath()})", file=stream)
                blocks.append(block)
        finally:
            close = getattr(voyage, "close", None)
            if callable(close):
                close()
    return blocks


def _block_spec(
    model: str,
    k: int,
    why: str | None,
    inputs: Any,
    order: Sequence[str],
    session: ApiSession,
    manifest: Mapping[str, Any],
    allow_busy: bool,
) -> BlockSpec:
    """One (model, k) block of the session: its measured calls in the seeded order, no warm-up; ``why``
    (the model has no passed adapter check) marks it not publishable. The TCP connect is measured now."""
    marks = (f"not publishable: {model} has no passed adapter check ({why}); --allow-unrated",) if why else ()
    return BlockSpec(
        kind="api",
        machine=str(manifest.get("host", {}).get("hostname", "desktop")),
        session=session.session,
        target=model,
        k=k,
        pass_=1,
        published=not why,
        warmup=(),
        measured=block_calls(inputs, order, k),
        query_seed=SEED,
        allow_busy=allow_busy,
        allow_unrated=bool(why),
        marks=marks,
        api=api_facts(session, connect_ns(session.endpoint)),
        candidates=dict(inputs.source),
    )


def _environment(
    model: str,
    k: int,
    out_root: Path,
    runs_dir: Path | None,
    stage: str,
    manifest: Mapping[str, Any],
    stream: TextIO,
    host: Any,
) -> Environment:
    """Where the block goes, the quality run its scores are checked against, and the telemetry beside it."""
    ref = reference_path(runs_dir, stage, model, k) if runs_dir is not None else None
    return Environment(
        out_root=out_root,
        manifest=manifest,
        reference=read_reference(ref) if ref is not None else None,
        reference_label=str(ref) if ref is not None else None,
        reference_missing=f"no quality run of {model} on {stage} under {runs_dir}",
        sampler=lambda: Sampler(host_probes(), interval_s=1.0),
        stream=stream,
        **({"host": host} if host is not None else {}),
    )
