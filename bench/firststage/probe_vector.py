"""The vector and hybrid probes: vector_query ``k``, ``ef`` and ``flat_search_cutoff``, schema
``hnsw_params``, hybrid search and the meaning of ``alpha``.

The crafted vector set (``HARD_N`` random unit vectors in ``HARD_DIMS`` dimensions, seed 20261009) is hard
for HNSW: on Typesense 0.24.1 the default graph misses part of the exact top 10 (about one in ten), so
asking for more search breadth (``ef``) or for exact search (``flat_search_cutoff`` below the filter's
count) must change what comes back. A hit counts as exact when its cosine distance is within ``DIST_TOL``
of the exact k-th distance (float32 on the server, float64 here).

Hybrid (Typesense v29.0 ``src/index.cpp``, rank fusion): ``alpha`` is the weight of the *vector* list,
``1 - alpha`` that of the text list; each list adds ``weight / rank`` (text ranks count equal scores as one
rank; vector ranks start at 1). On the crafted pair (A matches in the title, B in the text; B is nearer
the query vector) that gives A = 1 - alpha/2 and B = (1 + alpha)/2: with the plan's alpha 0.3, A (the
keyword winner) first, 0.85 against 0.65; with 0.7, B first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from bench.core.plan import GERMAN_FIELDS, GERMAN_LOCALE, GERMAN_SEARCH_PARAMS, HYBRID_ALPHA
from bench.firststage.definitions import KEYWORD_SORT
from bench.firststage.probe_core import ProbeResult, ProbeSession
from bench.firststage.search import vector_literal

HARD_N: Final = 500
HARD_DIMS: Final = 32
HARD_QUERIES: Final = 10
K: Final = 10
BIG_EF: Final = HARD_N  # breadth of the whole set: HNSW then finds (nearly) everything exact search finds
FILTER_FIELD: Final = "probe_all"  # always 1: a filter_by that matches every document
DIST_TOL: Final = 1e-5
PROBE_HNSW: Final = {
    "M": 12,
    "ef_construction": 64,
}  # not the server defaults (16, 200), so a kept value shows
SEED: Final = 20261009


@dataclass(frozen=True)
class VectorFixture:
    collection: str
    docs: np.ndarray  # float32 unit rows, row i = document id str(i)
    queries: np.ndarray


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, HARD_DIMS)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def setup(s: ProbeSession) -> VectorFixture:
    rng = np.random.default_rng(SEED)
    docs, queries = _unit(rng, HARD_N), _unit(rng, HARD_QUERIES)
    fields: list[dict[str, Any]] = [
        {"name": "embedding", "type": "float[]", "num_dim": HARD_DIMS},
        {"name": FILTER_FIELD, "type": "int32"},
    ]
    name = s.create("vec", fields)["name"]
    s.add(
        name,
        [{"id": str(i), "embedding": [float(v) for v in row], FILTER_FIELD: 1} for i, row in enumerate(docs)],
    )
    return VectorFixture(name, docs, queries)


def _vector_search(
    s: ProbeSession, fx: VectorFixture, *, filt: bool = False, **opts: Any
) -> list[list[dict[str, Any]]]:
    """Every probe query once, with ``opts`` inside vector_query; the record names the options, not the
    vectors."""
    base: dict[str, Any] = {"q": "*", "per_page": K, "exclude_fields": "embedding"}
    if filt:
        base["filter_by"] = f"{FILTER_FIELD}:=1"
    items = [(fx.collection, {**base, "vector_query": vector_literal(q, k=K, **opts)}) for q in fx.queries]
    shown = {
        **base,
        "vector_query": "embedding:([<probe query vector>], "
        + ", ".join(f"{k}: {v}" for k, v in {"k": K, **opts}.items())
        + ")",
    }
    return [
        s.hits(r)
        for r in s.searches(items, record={"collection": fx.collection, "searches": len(items), **shown})
    ]


def _exact_kth(fx: VectorFixture) -> np.ndarray:
    dist = 1.0 - fx.queries.astype(np.float64) @ fx.docs.astype(np.float64).T
    return np.sort(dist, axis=1)[:, K - 1]


def _misses(s: ProbeSession, fx: VectorFixture, hits: list[list[dict[str, Any]]]) -> int:
    """Exact top-k entries the answer lacks: k minus the hits within the exact k-th distance."""
    kth = _exact_kth(fx)
    total = 0
    for qi, row in enumerate(hits):
        ids = [int(str(h["document"]["id"])) for h in row[:K]]
        dist = 1.0 - fx.docs[ids].astype(np.float64) @ fx.queries[qi].astype(np.float64)
        total += K - int(np.sum(dist <= kth[qi] + DIST_TOL))
    return total


def k_and_distance(s: ProbeSession, fx: VectorFixture) -> ProbeResult:
    hits = _vector_search(s, fx)
    ordered = cosine = True
    for qi, row in enumerate(hits):
        got = [s.number(h, "vector_distance") for h in row]
        ordered &= got == sorted(got)
        ids = [int(str(h["document"]["id"])) for h in row]
        want = 1.0 - fx.docs[ids].astype(np.float64) @ fx.queries[qi].astype(np.float64)
        cosine &= bool(np.all(np.abs(np.asarray(got) - want) <= DIST_TOL))
    observed = {
        "hits per query": sorted({len(r) for r in hits}),
        "nearest first": ordered,
        "vector_distance = 1 - cosine": cosine,
    }
    return s.result(
        f"vector_query k={K}, per_page={K}: {K} hits per query, nearest first, "
        "vector_distance is the cosine distance",
        observed,
        {"hits per query": [K], "nearest first": True, "vector_distance = 1 - cosine": True},
        "the vector hits are not the k nearest in distance order",
    )


def ef(s: ProbeSession, fx: VectorFixture) -> ProbeResult:
    small, big = _vector_search(s, fx, ef=K), _vector_search(s, fx, ef=BIG_EF)
    ids = [[h["document"]["id"] for h in r] for r in small], [[h["document"]["id"] for h in r] for r in big]
    m_small, m_big = _misses(s, fx, small), _misses(s, fx, big)
    observed = {
        "result lists changed": ids[0] != ids[1],
        f"exact top-{K} missed at ef={K}": m_small,
        f"exact top-{K} missed at ef={BIG_EF}": m_big,
    }
    ok = ids[0] != ids[1] and m_big < m_small
    return s.result(
        f"vector_query ef: ef={BIG_EF} finds more of the exact top {K} than ef={K}",
        observed,
        {"result lists changed": True, f"fewer misses at ef={BIG_EF}": True},
        "raising ef changed nothing (or found no more of the exact top k): the server ignores ef",
        ok=ok,
    )


def flat_search_cutoff(s: ProbeSession, fx: VectorFixture) -> ProbeResult:
    flat = _vector_search(s, fx, filt=True, flat_search_cutoff=HARD_N + 1)
    hnsw = _vector_search(s, fx, filt=True, flat_search_cutoff=0)
    observed = {
        f"missed with flat_search_cutoff={HARD_N + 1}": _misses(s, fx, flat),
        "missed with flat_search_cutoff=0 (HNSW)": _misses(s, fx, hnsw),
    }
    ok = (
        observed[f"missed with flat_search_cutoff={HARD_N + 1}"] == 0
        and observed["missed with flat_search_cutoff=0 (HNSW)"] > 0
    )
    return s.result(
        f"flat_search_cutoff: a filter matching {HARD_N} documents and a cutoff "
        "above that gives exact search (HNSW on the same filter misses some)",
        observed,
        {f"missed with flat_search_cutoff={HARD_N + 1}": 0, "missed with flat_search_cutoff=0 (HNSW)": "> 0"},
        "the cutoff did not give exact search (or HNSW was exact too, so the set proved nothing)",
        ok=ok,
    )


def hnsw_params(s: ProbeSession) -> ProbeResult:
    fields = [{"name": "embedding", "type": "float[]", "num_dim": 4, "hnsw_params": dict(PROBE_HNSW)}]
    s.create("hnsw", fields)
    got = s.read_back(s.name("hnsw"))
    field = next(
        (f for f in got.get("fields", []) if isinstance(f, dict) and f.get("name") == "embedding"), {}
    )
    kept = field.get("hnsw_params")
    observed = {
        "hnsw_params read back": {k: kept.get(k) for k in PROBE_HNSW} if isinstance(kept, dict) else None
    }
    return s.result(
        f"schema hnsw_params {PROBE_HNSW} are kept (read back from the collection)",
        observed,
        {"hnsw_params read back": dict(PROBE_HNSW)},
        "the collection does not keep hnsw_params",
    )


HYBRID_DOCS: Final = (
    ("A", "Kartoffel", "", [0.6, 0.8, 0.0, 0.0]),
    ("B", "", "Kartoffel", [1.0, 0.0, 0.0, 0.0]),
    ("C", "", "Zeppelin", [0.0, 0.0, 1.0, 0.0]),
)
HYBRID_QUERY: Final = [1.0, 0.0, 0.0, 0.0]


@dataclass(frozen=True)
class HybridFixture:
    collection: str


def setup_hybrid(s: ProbeSession) -> HybridFixture:
    fields = [{"name": n, "type": "string", "locale": GERMAN_LOCALE} for n in GERMAN_FIELDS]
    name = s.create("hybrid", [*fields, {"name": "embedding", "type": "float[]", "num_dim": 4}])["name"]
    s.add(name, [{"id": i, "title": t, "text": x, "embedding": v} for i, t, x, v in HYBRID_DOCS])
    return HybridFixture(name)


def _hybrid_params(alpha: float) -> dict[str, Any]:
    return {
        **GERMAN_SEARCH_PARAMS,
        # C, far from the query and without the word, could come only from the vector list (its length is
        # max(k, per_page) on 0.24.1, k in v29's source): two hits keep the fused answer the same either way
        "per_page": 2,
        "sort_by": KEYWORD_SORT,
        "exclude_fields": "embedding",
        "q": "Kartoffel",
        "vector_query": vector_literal(HYBRID_QUERY, k=2, alpha=alpha),
    }


def _hybrid(s: ProbeSession, fx: HybridFixture, alphas: list[float]) -> list[dict[str, Any]]:
    items = [(fx.collection, _hybrid_params(a)) for a in alphas]
    return s.searches(items, record=[{"collection": c, **p} for c, p in items], allow_error=True)


def hybrid(s: ProbeSession, fx: HybridFixture) -> ProbeResult:
    res = _hybrid(s, fx, [HYBRID_ALPHA])[0]
    if "error" in res:
        observed: dict[str, Any] = {"accepted": False, "answer": f"{res.get('code')} {res['error']}"}
    else:
        hits = s.hits(res)
        observed = {
            "accepted": True,
            "hits with hybrid_search_info.rank_fusion_score": sum(
                1
                for h in hits
                if isinstance((h.get("hybrid_search_info") or {}).get("rank_fusion_score"), int | float)
            ),
            "hits": len(hits),
        }
    expected = {"accepted": True, "hits with hybrid_search_info.rank_fusion_score": 2, "hits": 2}
    return s.result(
        "hybrid search: a keyword query with a vector_query is accepted and fused by rank",
        observed,
        expected,
        "the server rejected or did not fuse a keyword query with a vector query",
    )


def alpha(s: ProbeSession, fx: HybridFixture) -> ProbeResult:
    other = round(1.0 - HYBRID_ALPHA, 6)
    res = _hybrid(s, fx, [HYBRID_ALPHA, other])
    expected = {
        str(HYBRID_ALPHA): {
            "order": ["A", "B"],
            "rank_fusion_score": [round(1 - HYBRID_ALPHA / 2, 6), round((1 + HYBRID_ALPHA) / 2, 6)],
        },
        str(other): {
            "order": ["B", "A"],
            "rank_fusion_score": [round((1 + other) / 2, 6), round(1 - other / 2, 6)],
        },
    }
    observed: dict[str, Any] = {}
    for a, r in zip((HYBRID_ALPHA, other), res, strict=True):
        if "error" in r:
            observed[str(a)] = {"answer": f"{r.get('code')} {r['error']}"}
            continue
        hits = s.hits(r)
        observed[str(a)] = {
            "order": [str(h["document"]["id"]) for h in hits],
            "rank_fusion_score": [
                round(s.number(h, "hybrid_search_info", "rank_fusion_score"), 6) for h in hits
            ],
        }
    return s.result(
        f"alpha {HYBRID_ALPHA} is the weight of the vector list: the keyword winner A leads "
        f"at alpha {HYBRID_ALPHA}, the vector winner B at {other}",
        observed,
        expected,
        "the fused order or scores do not follow alpha as the vector weight",
    )
