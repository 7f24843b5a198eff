"""int8 agreement across machines (plan section "Latency": "int8 scores on the server must match the
desktop (Spearman >= 0.99 on 20 queries)").

A scores file holds one machine's int8 scores on the 20 queries of adapter check 1 (the first 20
MIRACLReranking queries, 100 fixed candidates each: the same input on every machine, no first stage
needed), ids and numbers only, plus the machine's CPU flags and the quantised folder's manifest digest.
``compare`` computes Spearman per query on the candidates both files share; a query passes at >= 0.99, a
missing query, a different candidate list or a NaN coefficient fails.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.atomic import write_bytes_atomic
from bench.equality.spearman import spearman
from bench.errors import BenchError
from bench.hints import hint
from bench.plan import INT8_MIN_SPEARMAN, INT8_SPEARMAN_QUERIES

FORMAT = "int8-scores/1"
MIN_SPEARMAN = INT8_MIN_SPEARMAN  # plan: Latency, "Spearman >= 0.99 on 20 queries"
QUERIES = INT8_SPEARMAN_QUERIES


def scores_record(
    scores: Mapping[str, tuple[Sequence[str], Sequence[float]]], *, model: str, machine: Mapping[str, Any],
    manifest_sha256: str | None, inputs: Mapping[str, Any],
) -> dict[str, Any]:  # fmt: skip
    return {
        "format": FORMAT,
        "model": model,
        "machine": dict(machine),
        "int8_manifest_sha256": manifest_sha256,
        "inputs": dict(inputs),
        "queries": {q: {"docids": list(d), "scores": [float(x) for x in s]} for q, (d, s) in scores.items()},
    }


def write_scores(path: Path, record: Mapping[str, Any]) -> None:
    write_bytes_atomic(path, json.dumps(record, indent=1, sort_keys=True).encode("utf-8") + b"\n")


def read_scores(path: Path) -> dict[str, tuple[list[str], list[float]]]:
    if not path.is_file():
        raise BenchError(
            f"{path}: scores file missing (write one with `{hint('int8 agreement --write FILE')}`)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchError(f"{path}: not valid JSON ({exc})") from exc
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(data.get("queries"), dict)
    ):
        raise BenchError(f"{path}: not an int8 scores file (format {FORMAT!r} with 'queries' expected)")
    out: dict[str, tuple[list[str], list[float]]] = {}
    for qid, row in data["queries"].items():
        docids, scores = (
            row.get("docids") if isinstance(row, dict) else None,
            row.get("scores") if isinstance(row, dict) else None,
        )
        if not isinstance(docids, list) or not isinstance(scores, list) or len(docids) != len(scores):
            raise BenchError(f"{path}: query {qid}: 'docids' and 'scores' must be lists of equal length")
        try:
            values = [float(x) for x in scores]
        except (TypeError, ValueError) as exc:
            raise BenchError(f"{path}: query {qid}: a score is not a number") from exc
        out[str(qid)] = ([str(d) for d in docids], values)
    return out


@dataclass(frozen=True)
class QueryAgreement:
    qid: str
    spearman: float | None  # None: not computable (missing query or different candidates)
    passed: bool
    reason: str


def compare(
    mine: Mapping[str, tuple[Sequence[str], Sequence[float]]],
    theirs: Mapping[str, tuple[Sequence[str], Sequence[float]]],
    *,
    threshold: float = MIN_SPEARMAN,
) -> list[QueryAgreement]:
    """Per query of ``theirs`` (the committed reference), in sorted order."""
    out: list[QueryAgreement] = []
    for qid in sorted(theirs):
        if qid not in mine:
            out.append(QueryAgreement(qid, None, False, "query missing on this machine"))
            continue
        d_ref, s_ref = theirs[qid]
        d_me, s_me = mine[qid]
        if sorted(d_ref) != sorted(d_me) or len(set(d_ref)) != len(d_ref):
            out.append(QueryAgreement(qid, None, False, "candidate lists differ"))
            continue
        by_id = dict(zip(d_me, s_me, strict=True))
        rho = spearman(list(s_ref), [by_id[d] for d in d_ref])
        ok = not math.isnan(rho) and rho >= threshold
        out.append(QueryAgreement(qid, rho, ok, "" if ok else f"Spearman {rho:.4f} < {threshold}"))
    return out


def summary(rows: Sequence[QueryAgreement]) -> dict[str, Any]:
    vals = [r.spearman for r in rows if r.spearman is not None and not math.isnan(r.spearman)]
    return {
        "queries": len(rows),
        "passed": sum(r.passed for r in rows),
        "failed": [r.qid for r in rows if not r.passed],
        "min_spearman": min(vals) if vals else None,
        "mean_spearman": sum(vals) / len(vals) if vals else None,
        "threshold": MIN_SPEARMAN,
        "per_query": {r.qid: {"spearman": r.spearman, "passed": r.passed, "reason": r.reason} for r in rows},
    }
