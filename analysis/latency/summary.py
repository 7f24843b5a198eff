"""Latency summaries from raw samples (plan section "Latency": p50 and p95; section "Costs": mean latency
for capacity, p95 of first stage plus reranker per query, billed tokens per k).

One percentile method everywhere (``PERCENTILE_METHOD``): ``numpy.percentile(method="linear")``, i.e.
Hyndman & Fan type 7, the default of numpy, R and Excel's PERCENTILE.INC: the value at rank
``(n - 1) * q / 100`` (0-based) of the sorted sample, interpolated linearly between its two neighbours.
Times are kept in integer nanoseconds in files and given in float milliseconds here, unrounded.
A failed call (``ns`` null) is not a latency: it is counted in ``failed``, never given a number.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np

PERCENTILE_METHOD = (
    "numpy.percentile method 'linear' (Hyndman & Fan type 7): value at 0-based rank (n - 1) * q / 100 of the "
    "sorted sample, linear interpolation between neighbours"
)


class Block(Protocol):
    """What the summaries read of a block (:class:`analysis.latency.records.Block` has it): a Protocol, so
    that this module does not import the records module, which imports this one."""

    @property
    def samples(self) -> Sequence[Any]: ...  # analysis.latency.records.Sample

    @property
    def path(self) -> str | None: ...

    @property
    def target(self) -> str: ...


def percentile_ms(ns: Sequence[int], q: float) -> float:
    """The q-th percentile (0..100) of integer nanoseconds, in milliseconds, by ``PERCENTILE_METHOD``."""
    if not len(ns):
        raise ValueError("no samples")
    return float(np.percentile(np.asarray(ns, dtype=np.float64), q, method="linear")) / 1e6


@dataclass(frozen=True)
class LatencySummary:
    """p50, p95, mean, min, max in milliseconds and n; every value None when n == 0 (never 0)."""

    n: int
    p50_ms: float | None
    p95_ms: float | None
    mean_ms: float | None
    min_ms: float | None
    max_ms: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarise(ns: Iterable[int]) -> LatencySummary:
    """Summary of call times given in integer nanoseconds."""
    values = [int(x) for x in ns]
    if not values:
        return LatencySummary(0, None, None, None, None, None)
    arr = np.asarray(values, dtype=np.float64)
    return LatencySummary(
        n=len(values),
        p50_ms=percentile_ms(values, 50),
        p95_ms=percentile_ms(values, 95),
        mean_ms=float(arr.mean()) / 1e6,
        min_ms=min(values) / 1e6,
        max_ms=max(values) / 1e6,
    )


@dataclass(frozen=True)
class BlockSummary:
    """What the report's table shows for one block, all recomputed from its samples."""

    latency: LatencySummary
    cuda: LatencySummary  # CUDA-event times (n == 0 unless a GPU run)
    failed: int  # calls without a time (API queries that failed for good)
    retried: int  # API: queries that needed more than one attempt
    chunk_sizes: tuple[int, ...]  # distinct chunk sizes used (one per block by the plan's rule)
    input_tokens: Distribution | None  # tokens per call (the input length distribution)
    billed_tokens: int | None  # API: sum over the block's successful calls
    server_ms: Distribution | None  # first stage: Typesense's search_time_ms

    def to_dict(self) -> dict[str, Any]:
        return {
            "latency": self.latency.to_dict(),
            "cuda": self.cuda.to_dict(),
            "failed": self.failed,
            "retried": self.retried,
            "chunk_sizes": list(self.chunk_sizes),
            "input_tokens": None if self.input_tokens is None else self.input_tokens.to_dict(),
            "billed_tokens": self.billed_tokens,
            "server_ms": None if self.server_ms is None else self.server_ms.to_dict(),
            "percentile_method": PERCENTILE_METHOD,
        }


@dataclass(frozen=True)
class Distribution:
    """The same statistics on plain numbers (tokens per call, server-reported ms), same percentile method."""

    n: int
    p50: float
    p95: float
    mean: float
    min: float
    max: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def describe(values: Sequence[float]) -> Distribution | None:
    if not values:
        return None
    arr = np.asarray(values, dtype=np.float64)
    return Distribution(
        n=len(values),
        p50=float(np.percentile(arr, 50, method="linear")),
        p95=float(np.percentile(arr, 95, method="linear")),
        mean=float(arr.mean()),
        min=float(arr.min()),
        max=float(arr.max()),
    )


def block_summary(block: Block) -> BlockSummary:
    ok = [s for s in block.samples if s.ns is not None]
    tokens = [s.input_tokens for s in ok if s.input_tokens is not None]
    billed = [s.billed_tokens for s in ok if s.billed_tokens is not None]
    server = [s.server_ms for s in ok if s.server_ms is not None]
    return BlockSummary(
        latency=summarise(s.ns for s in ok if s.ns is not None),
        cuda=summarise(s.cuda_ns for s in ok if s.cuda_ns is not None),
        failed=len(block.samples) - len(ok),
        retried=sum(1 for s in block.samples if s.retried),
        chunk_sizes=tuple(sorted({s.chunk_size for s in ok if s.chunk_size is not None})),
        input_tokens=describe([float(t) for t in tokens]),
        billed_tokens=sum(billed) if billed else None,
        server_ms=describe(server),
    )


def per_query_ns(block: Block) -> dict[str, int]:
    """query id -> call time in ns of one block (failed calls left out: they have no latency)."""
    out: dict[str, int] = {}
    for s in block.samples:
        if s.ns is None:
            continue
        if s.query_id in out:
            raise ValueError(f"{block.path or block.target}: query {s.query_id} measured twice in one block")
        out[s.query_id] = s.ns
    return out


def per_query_server_ms(block: Block) -> dict[str, float]:
    """First stage: query id -> Typesense's reported ``search_time_ms``."""
    return {s.query_id: s.server_ms for s in block.samples if s.server_ms is not None}


def billed_tokens_per_query(block: Block) -> dict[str, int]:
    """API: query id -> billed tokens of its successful call."""
    return {
        s.query_id: s.billed_tokens for s in block.samples if s.billed_tokens is not None and s.ns is not None
    }


def summed_per_query(parts: Sequence[Mapping[str, int]]) -> dict[str, int]:
    """Per-query sum of several per-query times (first stage plus reranker); only queries present in every
    part count (a query missing from one part has no total; the caller reports how many were left out)."""
    if not parts:
        return {}
    common = set(parts[0]).intersection(*parts[1:])
    return {q: sum(p[q] for p in parts) for q in sorted(common)}
