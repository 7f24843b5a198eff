"""Performance of the latency harness itself: prints two figures.

1. Timer and bookkeeping overhead per call with a do-nothing adapter (it returns a prebuilt result): the
   time of ``RerankerCaller.__call__`` (clock reads, the adapter call, building the raw sample) measured
   from outside with ``perf_counter_ns``, and the per-call share of a whole ``run_block`` loop (progress,
   sample list). Target: median under 20 microseconds.
2. The telemetry sampler running against not running, same adapter and same calls, side by side in one
   run: calls alternate in groups of ``--group`` between "sampler on" and "sampler off" (ABAB, so drift of
   the machine hits both), and the p50 of each is compared. Target: within 1 %. The adapter is a fixed
   CPU-bound numpy workload by default (``--work-ms`` per call), or the real stand-in
   (``--model minilm-standin``, query plus k bundled German passages encoded per call).

Timings on a shared machine are noisy: the load average is printed next to every figure.

Run: ``uv run python benchmarks/bench_latency_harness.py [--calls 20000] [--sampler-calls 400]
[--interval 0.5] [--model numpy|minilm-standin]``.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.latency.callers import RerankerCaller  # noqa: E402
from bench.latency.harness import BlockSpec, Call, Environment, run_block  # noqa: E402
from bench.latency.host import FOREIGN_WINDOW_S, measure_foreign_load  # noqa: E402
from bench.latency.telemetry import Sampler, host_probes  # noqa: E402
from bench.latency.timer import WallTimer  # noqa: E402
from bench.rerankers.protocol import RerankerMeta, ScoreResult, make_result  # noqa: E402


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


class Nothing:
    meta = RerankerMeta(
        id="nothing", model="-", revision=None, dtype="float32", device="cpu", chunk_size=None, listwise=False
    )

    def __init__(self, k: int) -> None:
        self._result = make_result(
            [0.0] * k, max_input_tokens=1, truncated_pairs=0, chunk_size=k, input_tokens=k
        )

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        return self._result


class NumpyWork:
    """A fixed CPU-bound workload (matrix products) of roughly ``ms`` milliseconds per call."""

    meta = Nothing.meta

    def __init__(self, ms: float, k: int) -> None:
        import numpy as np

        self.np = np
        self.k = k
        self.a = np.random.default_rng(1).standard_normal((256, 256)).astype(np.float32)
        start = time.perf_counter()
        self._mul(5)
        per = (time.perf_counter() - start) / 5
        self.reps = max(1, round(ms / 1000 / per))

    def _mul(self, n: int) -> float:
        x = self.a
        for _ in range(n):
            x = self.np.tanh(x @ self.a)
        return float(x[0, 0])

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        self._mul(self.reps)
        return make_result(
            [0.0] * len(passages), max_input_tokens=1, truncated_pairs=0, chunk_size=len(passages)
        )


def bundled_calls(n: int, k: int) -> list[Call]:
    """n calls of k real German passages (bundled rehearsal corpus) with real dev queries."""
    from bench.rehearse.inputs import load_inputs

    inputs = load_inputs(None, None)
    qids = sorted(inputs.queries)
    texts = [p.passage_text for p in inputs.corpus[: k * 7]]
    out = []
    for i in range(n):
        q = qids[i % len(qids)]
        chosen = tuple(texts[(i * 13 + j) % len(texts)] for j in range(k))
        out.append(Call(q, inputs.queries[q], tuple(f"d{j}" for j in range(k)), chosen))
    return out


def caller_ns(n: int, k: int) -> tuple[list[int], list[int], Call, RerankerCaller]:
    """``n`` calls of ``RerankerCaller`` on the do-nothing adapter after 1,000 warm-up calls: nanoseconds of
    each call measured from outside, and the ns each call recorded. Also used by ``guard.py``."""
    adapter = Nothing(k)
    caller = RerankerCaller(adapter, WallTimer())  # type: ignore[arg-type]
    call = Call("q", "frage", tuple(f"d{i}" for i in range(k)), tuple("text" for _ in range(k)))
    for _ in range(1000):
        caller(call, k=k, pass_=1)
    outer = []
    inner = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        obs = caller(call, k=k, pass_=1)
        outer.append(time.perf_counter_ns() - t0)
        inner.append(obs.sample.ns or 0)
    return outer, inner, call, caller


def overhead(n: int, k: int) -> None:
    outer, inner, call, caller = caller_ns(n, k)
    spec = BlockSpec(
        kind="cpu",
        machine="bench",
        session="bench",
        target="nothing",
        k=k,
        pass_=1,
        published=False,
        warmup=(),
        measured=tuple([call] * n),
        query_seed=None,
        allow_busy=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        # the per-call share of the loop, with the harness's own host snapshots (no window: the busy rule
        # reads the CPU counters at the block's start and end; its one window is spent before the run)
        env = Environment(out_root=Path(tmp), manifest={}, stream=io.StringIO())
        t0 = time.perf_counter_ns()
        run_block(spec, caller, env)  # type: ignore[arg-type]
        block_ns = time.perf_counter_ns() - t0
    print(f"[1] timer + bookkeeping per call, do-nothing adapter, k={k}, {n:,} calls ({load()}):")
    print(
        f"    RerankerCaller from outside: median {statistics.median(outer) / 1000:.2f} us, "
        f"p95 {sorted(outer)[int(0.95 * n)] / 1000:.2f} us (target: median < 20 us)"
    )
    print(f"    recorded ns of the do-nothing call itself: median {statistics.median(inner) / 1000:.2f} us")
    print(
        f"    whole run_block (host state, loop, summary, JSON write) per call: {block_ns / n / 1000:.2f} us"
    )
    measure_foreign_load(0.0)  # warm-up: the first call imports psutil
    w0 = time.perf_counter_ns()
    foreign = measure_foreign_load(0.0)
    read_ms = (time.perf_counter_ns() - w0) / 1e6
    print(
        f"    per block, twice (start and end): {read_ms:.1f} ms to read the host's and our process tree's "
        f"CPU times ({foreign['method']}); once per run: the foreign-load window {FOREIGN_WINDOW_S:g} s"
    )


def sampler_impact(adapter: Any, work: list[Call], k: int, interval: float, group: int) -> None:
    caller = RerankerCaller(adapter, WallTimer())
    for c in work[:5]:
        caller(c, k=k, pass_=1)
    on: list[int] = []
    off: list[int] = []
    i = 0
    sampler_calls = 0
    while i < len(work):
        for state in ("on", "off"):
            chunk = work[i : i + group]
            i += group
            sampler = Sampler(host_probes(), interval_s=interval).start() if state == "on" else None
            for c in chunk:
                ns = caller(c, k=k, pass_=1).sample.ns or 0
                (on if state == "on" else off).append(ns)
            if sampler is not None:
                sampler_calls += len(sampler.stop()["samples"])
    p_on, p_off = statistics.median(on), statistics.median(off)
    print(
        f"[2] telemetry sampler on vs off, interval {interval} s, ABAB groups of {group}, {len(on)} + "
        f"{len(off)} calls ({load()}):"
    )
    print(
        f"    p50 on {p_on / 1e6:.3f} ms, off {p_off / 1e6:.3f} ms: difference "
        f"{100 * (p_on - p_off) / p_off:+.2f} % (target: within 1 %); {sampler_calls} telemetry ticks"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--sampler-calls", type=int, default=400)
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--group", type=int, default=10)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--work-ms", type=float, default=20.0)
    ap.add_argument("--model", choices=["numpy", "minilm-standin"], default="numpy")
    args = ap.parse_args()
    print(f"start: {load()}")
    overhead(args.calls, args.k)
    if args.model == "numpy":
        adapter: Any = NumpyWork(args.work_ms, args.k)
        work = [
            Call(f"q{i}", "frage", tuple(f"d{j}" for j in range(args.k)), tuple("t" for _ in range(args.k)))
            for i in range(args.sampler_calls)
        ]
    else:
        from bench.rerankers.registry import load_reranker

        adapter = load_reranker("minilm-standin")
        work = bundled_calls(args.sampler_calls, args.k)
    sampler_impact(adapter, work, args.k, args.interval, args.group)


if __name__ == "__main__":
    main()
