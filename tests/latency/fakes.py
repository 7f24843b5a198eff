"""Fake adapters and helpers for the latency tests (no torch, no model)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.latency.harness import BlockSpec, Call, Environment
from bench.rerankers.protocol import RerankerMeta, ScoreResult, make_result


class FakeReranker:
    """Scores = minus the passage index (first-stage order kept), optional sleep, chunk size as configured."""

    def __init__(self, *, delay_s: float = 0.0, chunk: int | None = None, fail_at: int | None = None) -> None:
        self.meta = RerankerMeta(
            id="fake",
            model="fake/model",
            revision="0" * 40,
            dtype="float32",
            device="cpu",
            chunk_size=chunk,
            listwise=False,
        )
        self.delay_s = delay_s
        self.chunk = chunk
        self.calls = 0
        self.fail_at = fail_at

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        self.calls += 1
        if self.fail_at is not None and self.calls == self.fail_at:
            raise KeyboardInterrupt
        if self.delay_s:
            time.sleep(self.delay_s)
        n = len(passages)
        chunk = min(self.chunk or n, n)
        return make_result(
            [float(-i) for i in range(n)],
            max_input_tokens=7,
            truncated_pairs=0,
            chunk_size=chunk,
            input_tokens=5 * n,
        )


def calls(n: int, k: int = 5, prefix: str = "q") -> tuple[Call, ...]:
    out = []
    for i in range(n):
        docids = tuple(f"d{i}-{j}" for j in range(k))
        out.append(Call(f"{prefix}{i:03d}", f"Frage {i}", docids, tuple(f"Text {d}" for d in docids)))
    return tuple(out)


def spec(measured: int = 6, warmup: int = 2, k: int = 5, **kw: Any) -> BlockSpec:
    c = calls(measured, k)
    return BlockSpec(
        kind="cpu",
        machine="test box",
        session="testbox",
        target="fake",
        k=k,
        pass_=1,
        published=False,
        warmup=c[:warmup],
        measured=c,
        query_seed=1,
        **kw,
    )


def host_sequence(cores: float, *, load1: float = 0.0, own: float = 0.0, cpu_count: int = 8) -> Any:
    """A host function whose snapshots are 1 s apart, during which other processes used ``cores`` cores and
    we ``own`` (its ``foreign`` entry, the window before a run, says the same)."""
    n = iter(range(10**9))

    def state() -> dict[str, Any]:
        i = next(n)
        return {
            "load1": load1,
            "cpu_count": cpu_count,
            "foreign": {"cores": cores, "window_s": 1.0},
            "cpu_counters": {
                "monotonic_s": float(i),
                "host_busy_cpu_s": (cores + own) * i,
                "own_cpu_s": own * i,
            },
        }

    return state


def quiet_host() -> dict[str, Any]:
    return {
        "load1": 0.0,
        "cpu_count": 8,
        "foreign": {"cores": 0.0, "window_s": 1.0},
        "cpu_counters": {"monotonic_s": time.monotonic(), "host_busy_cpu_s": 0.0, "own_cpu_s": 0.0},
    }


def env(root: Path, **kw: Any) -> Environment:
    import io

    kw.setdefault("host", quiet_host)
    return Environment(out_root=root, manifest={"kind": "test"}, stream=io.StringIO(), **kw)


def reference_for(block_calls: Sequence[Call], reverse: bool = False) -> dict[str, dict[str, float]]:
    sign = 1.0 if reverse else -1.0
    return {c.query_id: {d: sign * j for j, d in enumerate(c.docids)} for c in block_calls}
