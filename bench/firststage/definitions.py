"""The five first stages of the plan as data: schema, search parameters and the server features needed.

A stage is data; ``bench.firststage.stages.run_stage`` runs any of them. Tie rule (plan: "score ties are
broken by insertion order"; documents are imported in ascending MIRACL id, ``bench.data.IMPORT_ORDER``):
- keyword stages: ``sort_by=_text_match:desc,_seq_id:asc`` (without it the server appends
  ``_seq_id:desc``, newest first; tested against the real server).
- vector stage: Typesense 0.24.1 ignores ``_seq_id`` for vector queries and has no ``_vector_distance``
  sort field, so the returned top-k hits are put in order on the client with
  ``analysis.stats.ranking.rank_by_score`` (cosine similarity descending, ties by import position).
- hybrid stage: ``sort_by=_text_match:desc,_seq_id:asc``; during hybrid search ``_text_match`` is the
  rank-fusion score (Typesense docs, vector search, "Hybrid Search").
Vector and hybrid requests send ``exclude_fields=embedding`` (response shape only: 100 hits would
otherwise carry 100 x 1024 floats back, which would dominate the client wall time).
keyword-plain-71k sends only what is needed to get the plan's output: ``query_by=title,text`` (required
by the server), ``per_page=100`` (the default is 10) and the tie ``sort_by``; everything else is the
server's default (no locale, no stemming, no stop words, prefix search on, default typo settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from bench.core.plan import (
    FIRST_STAGE_DEPTH,
    GERMAN_FIELDS,
    GERMAN_LOCALE,
    GERMAN_SEARCH_PARAMS,
    HYBRID_ALPHA,
    STAGES,
)

KEYWORD_SORT: Final = "_text_match:desc,_seq_id:asc"
STOPWORD_SET_ID: Final = "miracl-de-snowball"
EF_START: Final = 100  # = k; HNSW search breadth is at least k
EF_LADDER: Final = (100, 200, 400, 800, 1600, 3200, 6400)
VECTOR_TIE_RULE: Final = (
    "client-side: returned top-k hits ordered by cosine similarity descending, ties by import position "
    "(analysis.stats.ranking.rank_by_score)"
)

Kind = Literal["keyword", "vector", "hybrid"]

#: Rehearsal only: an always-1 int field on vector documents, so that a server without ``ef`` (before 26.0)
#: can be asked for *exact* search. Typesense brute-forces a vector query only when a ``filter_by`` matches
#: fewer documents than ``flat_search_cutoff`` (checked on 0.24.1: without a filter the cutoff is ignored).
EXACT_FILTER_FIELD: Final = "rehearsal_all"


@dataclass(frozen=True)
class ExactSubstitute:
    """Exact (flat) vector search inside Typesense, used by a rehearsal in place of raising ``ef``."""

    flat_search_cutoff: int
    filter_by: str = f"{EXACT_FILTER_FIELD}:=1"

    @classmethod
    def for_corpus(cls, n_docs: int) -> ExactSubstitute:
        return cls(flat_search_cutoff=n_docs + 1)

    @property
    def label(self) -> str:
        return (
            f"exact search in Typesense (filter_by={self.filter_by}, "
            f"flat_search_cutoff={self.flat_search_cutoff})"
        )


#: Rehearsal only: the keyword stage a server without ``stem`` and stop-word sets (before 26.0) may
#: still run, as a declared substitute. Only keyword-71k: keyword-full has no full corpus in a rehearsal.
KEYWORD_SUBSTITUTE_STAGES: Final = ("keyword-71k",)
KEYWORD_SUBSTITUTE_DROPS: Final = ("stem", "stopwords")  # features the substitute does without


@dataclass(frozen=True)
class KeywordSubstitute:
    """German keyword search on a server without ``stem`` and stop-word sets, used by a rehearsal only:
    the plan's fields with ``locale`` but no ``stem``, the plan's search parameters without ``stopwords``,
    and the plan's stop set removed from each query on the client (``bench.firststage.stopwords.
    rehearsal_strip_stopwords``)."""

    server_version: str

    @property
    def label(self) -> str:
        return (
            f"German keyword search without stemming (field stem needs Typesense 26.0, server "
            f"{self.server_version}) and with the plan's stop set removed from the query on the client "
            "(stop-word sets need 26.0)"
        )


@dataclass(frozen=True)
class StageDef:
    id: str
    corpus: Literal["71k", "full"]
    kind: Kind
    collection: str
    fields: tuple[dict[str, Any], ...]  # without the vector field (added with the embedder's dims)
    params: dict[str, Any]  # static search parameters
    features: tuple[str, ...]  # always needed; ``ef`` is needed only if the first overlap misses the rule
    stopwords: bool
    vector: bool
    tie_rule: str
    notes: tuple[str, ...] = field(default=())

    def schema(self, dims: int | None = None, *, exact_filter: bool = False) -> dict[str, Any]:
        fields = [dict(f) for f in self.fields]
        if self.vector:
            if dims is None:
                raise ValueError(f"stage {self.id} needs the embedding dimension")
            fields.append({"name": "embedding", "type": "float[]", "num_dim": dims})
            if exact_filter:
                fields.append({"name": EXACT_FILTER_FIELD, "type": "int32"})
        return {"name": self.collection, "fields": fields}


_GERMAN_FIELDS = tuple(
    {"name": n, "type": "string", "locale": GERMAN_LOCALE, "stem": True} for n in GERMAN_FIELDS
)
_PLAIN_FIELDS = tuple({"name": n, "type": "string"} for n in GERMAN_FIELDS)
_GERMAN_PARAMS = {**GERMAN_SEARCH_PARAMS, "stopwords": STOPWORD_SET_ID, "sort_by": KEYWORD_SORT}
_GERMAN_FEATURES = ("text_search", "locale", "stem", "stopwords", "seq_id_sort")

_DEFS = (
    StageDef(
        "keyword-71k",
        "71k",
        "keyword",
        "miracl-de-71k-german",
        _GERMAN_FIELDS,
        _GERMAN_PARAMS,
        _GERMAN_FEATURES,
        stopwords=True,
        vector=False,
        tie_rule=f"sort_by={KEYWORD_SORT}",
    ),
    StageDef(
        "keyword-full",
        "full",
        "keyword",
        "miracl-de-full-german",
        _GERMAN_FIELDS,
        _GERMAN_PARAMS,
        _GERMAN_FEATURES,
        stopwords=True,
        vector=False,
        tie_rule=f"sort_by={KEYWORD_SORT}",
    ),
    StageDef(
        "keyword-plain-71k",
        "71k",
        "keyword",
        "miracl-de-71k-plain",
        _PLAIN_FIELDS,
        {"query_by": ",".join(GERMAN_FIELDS), "per_page": FIRST_STAGE_DEPTH, "sort_by": KEYWORD_SORT},
        ("text_search", "seq_id_sort"),
        stopwords=False,
        vector=False,
        tie_rule=f"sort_by={KEYWORD_SORT}",
        notes=("non-default parameters: query_by (required), per_page=100 (default 10), sort_by (ties)",),
    ),
    StageDef(
        "vector-71k",
        "71k",
        "vector",
        "miracl-de-71k-vector",
        (),
        {"q": "*", "per_page": FIRST_STAGE_DEPTH, "exclude_fields": "embedding"},
        ("vector_query",),
        stopwords=False,
        vector=True,
        tie_rule=VECTOR_TIE_RULE,
    ),
    StageDef(
        "hybrid-71k",
        "71k",
        "hybrid",
        "miracl-de-71k-hybrid",
        _GERMAN_FIELDS,
        {**_GERMAN_PARAMS, "exclude_fields": "embedding"},
        (*_GERMAN_FEATURES, "vector_query", "hybrid", "alpha"),
        stopwords=True,
        vector=True,
        tie_rule=f"sort_by={KEYWORD_SORT} (_text_match = rank-fusion score in hybrid search)",
        notes=(f"vector_query alpha={HYBRID_ALPHA}, k=100, ef chosen by the same overlap rule",),
    ),
)

STAGE_DEFS: Final = MappingProxyType({d.id: d for d in _DEFS})
if set(STAGE_DEFS) != set(STAGES):  # the registry must cover exactly the plan's stages
    raise RuntimeError(f"stage registry {sorted(STAGE_DEFS)} differs from the plan {sorted(STAGES)}")


def vector_options(stage: StageDef, ef: int | None, exact: ExactSubstitute | None = None) -> dict[str, Any]:
    """Options inside ``vector_query``: k, alpha (hybrid), ef (only when the server honours it), and in a
    rehearsal that substitutes exact search, flat_search_cutoff."""
    opts: dict[str, Any] = {"k": FIRST_STAGE_DEPTH}
    if stage.kind == "hybrid":
        opts["alpha"] = HYBRID_ALPHA
    if ef is not None:
        opts["ef"] = ef
    if exact is not None:
        opts["flat_search_cutoff"] = exact.flat_search_cutoff
    return opts
