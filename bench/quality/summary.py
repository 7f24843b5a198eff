"""What a finished (or partial) journal says per model: inputs, truncation, ties, errors, latency.

Plan sections "Rerankers" (longest observed input and number of truncated pairs per local model) and
"Latency" (p50 and p95 per depth; the first ``warmup`` calls of each (stage, model, depth) are left out when
there are more calls than that, as the plan discards warm-up calls). Pure functions of the journal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bench.quality.timing import percentiles_ms
from bench.rerankers.protocol import token_counts


def model_summaries(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """model -> calls, pairs, errors, max_input_tokens, truncated_pairs (None with ``tokens_unmeasured``
    when the adapter could not measure them, e.g. an API), ties, chunk sizes."""
    out: dict[str, dict[str, Any]] = {}
    calls: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        s = out.setdefault(
            r["model"],
            {
                "calls": 0,
                "pairs": 0,
                "errors": 0,
                "ties": 0,
                "chunk_size_min": None,
                "chunk_size_max": None,
            },
        )
        s["calls"] += 1
        if r["status"] != "ok":
            s["errors"] += 1
            continue
        call = r["call"] or {}
        s["pairs"] += int(call.get("n", len(r["scores"])))
        calls.setdefault(r["model"], []).append(call)
        s["ties"] += int(call.get("ties", 0))
        chunk = call.get("chunk_size")
        if chunk:
            s["chunk_size_min"] = chunk if s["chunk_size_min"] is None else min(s["chunk_size_min"], chunk)
            s["chunk_size_max"] = chunk if s["chunk_size_max"] is None else max(s["chunk_size_max"], chunk)
    for model, s in out.items():
        s.update(token_counts(calls.get(model, [])))
    return out


def latency_table(records: Iterable[Mapping[str, Any]], *, warmup: int) -> list[dict[str, Any]]:
    """One row per (stage, model, depth) in journal order: n, warm-up calls left out, p50/p95 in ms.

    Warm-up belongs to a process: each process's first ``warmup`` calls of a (stage, model, depth) are left
    out (``process_call`` < ``warmup``), so after a resume the new process's cold calls are not timed as
    warm. Only when a whole group has no more than ``warmup`` calls (a tiny rehearsal) is every call timed.
    Failed calls have no latency and are counted in ``errors``, never timed."""
    groups: dict[tuple[str, str, int], list[Mapping[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["stage"], r["model"], r["depth"]), []).append(r)
    rows = []
    for (stage, model, depth), recs in groups.items():
        tiny = len(recs) <= warmup
        # a record without ``process_call`` (older journals) counts by its position, as they were written
        kept = [r for i, r in enumerate(recs) if tiny or int(r.get("process_call", i)) >= warmup]
        timed = [int(r["latency_ns"]) for r in kept if r["latency_ns"] is not None]
        row = {
            "stage": stage,
            "model": model,
            "depth": depth,
            "warmup_excluded": len(recs) - len(kept),
            "processes": len({r.get("process") for r in recs}),
            "errors": sum(1 for r in recs if r["latency_ns"] is None),
        }
        row.update(percentiles_ms(timed))
        rows.append(row)
    return rows
