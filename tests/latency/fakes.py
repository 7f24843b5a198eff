"""The latency tests' use of the one fake adapter (``tests.support.fakes``) and their helpers (no torch)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.latency.harness import BlockSpec, Call, Environment
from tests.support.fakes import FakeReranker


def ordered_fake(**kw: Any) -> FakeReranker:
    """The one fake reranker as the latency tests use it: scores = minus the passage index (first-stage order
    kept, what ``reference_for`` expects), longest input 7 tokens, 5 tokens a passage; ``kw``: delay_s, chunk,
    fail_at, on_call, ..."""
    return FakeReranker(score="minus_index", max_input_tokens=7, input_tokens=5, **kw)


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
