"""Per-query search of a stage: request parameters, hits -> (docid, score) in rank order, latencies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis.stats.ranking import rank_by_score
from bench.core.errors import BenchError
from bench.core.plan import FIRST_STAGE_DEPTH
from bench.firststage.definitions import ExactSubstitute, StageDef, vector_options
from bench.firststage.search import search, vector_literal
from bench.firststage.server import TypesenseServer

Ranked = list[tuple[str, float]]


def request_params(
    stage: StageDef, query: str, vec: np.ndarray | None, ef: int | None, exact: ExactSubstitute | None = None
) -> dict[str, Any]:
    """The exact search parameters of one query (recorded in the result, vector omitted)."""
    params: dict[str, Any] = dict(stage.params)
    if stage.kind in ("keyword", "hybrid"):
        params["q"] = query
    if stage.kind in ("vector", "hybrid"):
        if vec is None:
            raise BenchError(f"stage {stage.id} needs a query embedding")
        params["vector_query"] = vector_literal(vec, **vector_options(stage, ef, exact))
        if exact is not None:
            params["filter_by"] = exact.filter_by
    return params


def vector_only_params(
    stage: StageDef, vec: np.ndarray, ef: int | None, exact: ExactSubstitute | None = None
) -> dict[str, Any]:
    """Pure vector query on the stage's collection (the ef rule, also for hybrid's vector part)."""
    opts: dict[str, Any] = {"k": FIRST_STAGE_DEPTH, **({"ef": ef} if ef is not None else {})}
    params: dict[str, Any] = {"q": "*", "per_page": FIRST_STAGE_DEPTH, "exclude_fields": "embedding"}
    if exact is not None:
        opts["flat_search_cutoff"] = exact.flat_search_cutoff
        params["filter_by"] = exact.filter_by
    return {**params, "vector_query": vector_literal(vec, **opts)}


def ranked_vector_hits(hits: Sequence[Mapping[str, Any]], position: Mapping[str, int]) -> Ranked:
    """Cosine similarity (1 - vector_distance), ties by import position (``rank_by_score``)."""
    pairs = sorted(((position[h["document"]["id"]], h) for h in hits), key=lambda t: t[0])
    ids = [h["document"]["id"] for _, h in pairs]
    scores = [1.0 - float(h["vector_distance"]) for _, h in pairs]
    return rank_by_score(ids, scores)[:FIRST_STAGE_DEPTH]


def ranked_hits(stage: StageDef, hits: Sequence[Mapping[str, Any]], position: Mapping[str, int]) -> Ranked:
    if stage.kind == "vector":
        return ranked_vector_hits(hits, position)
    out: Ranked = []
    for h in hits[:FIRST_STAGE_DEPTH]:
        if stage.kind == "hybrid":
            info = h.get("hybrid_search_info") or {}
            if "rank_fusion_score" not in info:
                raise BenchError(
                    f"stage {stage.id}: hit without hybrid_search_info.rank_fusion_score: {h.keys()}"
                )
            score = float(info["rank_fusion_score"])
        else:
            # text_match is an int64 (~6e17); float64 keeps the order (ties may merge in the score column,
            # the rank column keeps the server's order)
            score = float(h["text_match"])
        out.append((str(h["document"]["id"]), score))
    return out


@dataclass
class Timings:
    server_ms: list[float] = field(default_factory=list)
    client_ms: list[float] = field(default_factory=list)
    query_ids: list[str] = field(default_factory=list)  # same order as the two lists above

    def record(self) -> dict[str, Any]:
        def pct(values: list[float]) -> dict[str, float | None]:
            if not values:
                return {"p50": None, "p95": None, "mean": None}
            a = np.asarray(values)
            return {
                "p50": float(np.percentile(a, 50)),
                "p95": float(np.percentile(a, 95)),
                "mean": float(a.mean()),
            }

        return {
            "queries": len(self.client_ms),
            "server_search_time_ms": pct(self.server_ms),
            "client_wall_ms": pct(self.client_ms),
            "percentile_method": "numpy.percentile, linear interpolation",
            "client_clock": "time.perf_counter_ns around the HTTP request (POST /multi_search, one search)",
            "per_query_server_ms": self.server_ms,
            "per_query_client_ms": self.client_ms,
            "per_query_ids": self.query_ids,
        }


def _vec(qvecs: Mapping[str, np.ndarray] | None, qid: str) -> np.ndarray | None:
    return qvecs[qid] if qvecs is not None else None


def run_queries(
    server: TypesenseServer,
    stage: StageDef,
    queries: Mapping[str, str],
    qvecs: Mapping[str, np.ndarray] | None,
    ef: int | None,
    position: Mapping[str, int],
    *,
    warmup: int = 0,
    exact: ExactSubstitute | None = None,
) -> tuple[dict[str, Ranked], Timings]:
    qids = list(queries)
    for qid in qids[:warmup]:  # discarded: first calls pay for cold caches
        search(server, stage.collection, request_params(stage, queries[qid], _vec(qvecs, qid), ef, exact))
    run: dict[str, Ranked] = {}
    t = Timings()
    for qid in qids:
        res = search(
            server, stage.collection, request_params(stage, queries[qid], _vec(qvecs, qid), ef, exact)
        )
        run[qid] = ranked_hits(stage, res.hits, position)
        t.server_ms.append(res.server_ms)
        t.client_ms.append(res.client_ms)
        t.query_ids.append(qid)
    return run, t


def vector_top_ids(
    server: TypesenseServer,
    stage: StageDef,
    qvecs: Mapping[str, np.ndarray],
    ef: int | None,
    position: Mapping[str, int],
    exact: ExactSubstitute | None = None,
) -> list[list[str]]:
    out = []
    for qid in qvecs:
        res = search(server, stage.collection, vector_only_params(stage, qvecs[qid], ef, exact))
        out.append([d for d, _ in ranked_vector_hits(res.hits, position)])
    return out
