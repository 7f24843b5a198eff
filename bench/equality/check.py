"""Check 1: per-query Spearman between an adapter and its deciding reference (plan: Adapter checks 1).

Pass iff every query's Spearman is >= 0.99 (a NaN, e.g. from constant scores, fails). A reference that
cannot run leaves the model "not rated" with the reason; further references are reported, never deciding.
The functions here take the adapter and a reference runner as arguments, so tests drive them with tiny
models and deliberately wrong variants.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.core.plan import EQUALITY_MIN_SPEARMAN
from bench.core.progress import Progress
from bench.equality.data import EqualityQuery
from bench.equality.references import ReferenceSpec, ReferenceUnavailable
from bench.equality.spearman import spearman
from bench.rerankers.protocol import Reranker

# (spec, queries) -> {"scores": {qid: [...]}, "versions": {...}, "seconds": float}
ReferenceRunner = Callable[[ReferenceSpec, Sequence[EqualityQuery]], dict[str, Any]]


def adapter_scores(reranker: Reranker, queries: Sequence[EqualityQuery]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    with Progress(f"adapter {reranker.meta.id}", len(queries), "queries") as progress:
        for q in queries:
            out[q.qid] = reranker.score(q.query, list(q.passages)).scores
            progress.advance()
    return out


def compare(
    queries: Sequence[EqualityQuery], ours: dict[str, np.ndarray], theirs: dict[str, Sequence[float]]
) -> list[dict[str, Any]]:
    rows = []
    for q in queries:
        rho = spearman(ours[q.qid], np.asarray(theirs[q.qid], dtype=np.float64))
        rows.append(
            {
                "qid": q.qid,
                "source_qid": q.source_qid,
                "n": len(q.passages),
                "spearman": None if math.isnan(rho) else rho,
                "pass": (not math.isnan(rho)) and rho >= EQUALITY_MIN_SPEARMAN,
            }
        )
    return rows


def summarise_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    values = [r["spearman"] for r in rows]
    failed = [r["qid"] for r in rows if not r["pass"]]
    finite = [v for v in values if v is not None]
    return {
        "min_spearman": None if len(finite) < len(values) or not finite else min(finite),
        "failed_queries": failed,
        "passed": not failed and bool(rows),
    }


def run_equality(
    model_id: str,
    reranker: Reranker,
    queries: Sequence[EqualityQuery],
    deciding: ReferenceSpec | None,
    further: Sequence[ReferenceSpec],
    runner: ReferenceRunner,
) -> dict[str, Any]:
    """Check 1 for one model: verdict, per-query Spearman, the references used. JSON-ready, no texts."""
    ours = adapter_scores(reranker, queries)
    return evaluate(model_id, reranker.meta.to_dict(), ours, queries, deciding, further, runner)


def evaluate(
    model_id: str,
    adapter_meta: dict[str, Any],
    ours: dict[str, np.ndarray],
    queries: Sequence[EqualityQuery],
    deciding: ReferenceSpec | None,
    further: Sequence[ReferenceSpec],
    runner: ReferenceRunner,
) -> dict[str, Any]:
    """Check 1 from the adapter's scores (the adapter may already be unloaded: references need the memory)."""
    result: dict[str, Any] = {
        "model": model_id,
        "check": "adapter equality (check 1)",
        "threshold": EQUALITY_MIN_SPEARMAN,
        "n_queries": len(queries),
        "adapter": adapter_meta,
        "further_references": [],
    }
    if deciding is None:
        result.update(
            rated=False, verdict="not rated", reason=f"no deciding reference is defined for {model_id}"
        )
        result["deciding_reference"] = None
        result["queries"] = []
        return result
    ref_info: dict[str, Any] = {"label": deciding.label, "description": deciding.description}
    result["deciding_reference"] = ref_info
    try:
        ref = runner(deciding, queries)
    except ReferenceUnavailable as exc:
        ref_info["status"] = "could not run"
        result.update(
            rated=False, verdict="not rated", reason=f"deciding reference could not run: {exc}", queries=[]
        )
    else:
        ref_info.update(status="ran", versions=ref.get("versions"), seconds=ref.get("seconds"))
        rows = compare(queries, ours, ref["scores"])
        summary = summarise_rows(rows)
        result["queries"] = rows
        result["min_spearman"] = summary["min_spearman"]
        if summary["passed"]:
            result.update(
                rated=True,
                verdict="rated",
                reason=f"Spearman >= {EQUALITY_MIN_SPEARMAN} on all {len(rows)} queries "
                f"(min {summary['min_spearman']:.6f}) against {deciding.label}",
            )
        else:
            worst = min(rows, key=lambda r: -2.0 if r["spearman"] is None else r["spearman"])
            n_failed = len(summary["failed_queries"])
            result.update(
                rated=False,
                verdict="not rated",
                reason=f"Spearman below {EQUALITY_MIN_SPEARMAN} (or undefined) on {n_failed} of {len(rows)} "
                f"queries against {deciding.label}; worst query {worst['qid']}: {worst['spearman']}",
            )
    for spec in further:
        entry: dict[str, Any] = {"label": spec.label, "description": spec.description, "deciding": False}
        try:
            ref = runner(spec, queries)
        except ReferenceUnavailable as exc:
            entry.update(status="could not run", reason=str(exc))
        else:
            rows = compare(queries, ours, ref["scores"])
            entry.update(status="ran", versions=ref.get("versions"), queries=rows, **summarise_rows(rows))
        result["further_references"].append(entry)
    return result
