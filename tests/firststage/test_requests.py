"""The exact requests of the stages that 0.24.1 cannot run (built here, executed only against 30.2)."""

from __future__ import annotations

import numpy as np

from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.queries import request_params, vector_only_params
from bench.firststage.search import vector_literal


def test_hybrid_request() -> None:
    vec = np.array([0.5, -0.25, 0.125], dtype=np.float32)
    p = request_params(STAGE_DEFS["hybrid-71k"], "Wo liegt Kanada?", vec, ef=400)
    assert p["q"] == "Wo liegt Kanada?"
    assert p["query_by"] == "title,text"  # the embedding field is not in query_by: external embeddings
    assert p["vector_query"] == "embedding:([0.5,-0.25,0.125], k: 100, alpha: 0.3, ef: 400)"
    assert p["sort_by"] == "_text_match:desc,_seq_id:asc"  # _text_match = fusion score in hybrid search
    assert p["stopwords"] == "miracl-de-snowball"
    keys = ("prefix", "drop_tokens_threshold", "num_typos", "typo_tokens_threshold", "per_page")
    assert tuple(p[k] for k in keys) == ("false", 100, 2, 1, 100)
    # without ef support nothing about ef is sent (never a silently ignored parameter)
    assert "ef" not in request_params(STAGE_DEFS["hybrid-71k"], "q", vec, ef=None)["vector_query"]


def test_keyword_german_request_and_schema() -> None:
    stage = STAGE_DEFS["keyword-71k"]
    p = request_params(stage, "Wer erfand den Buchdruck?", None, None)
    assert "vector_query" not in p and p["q"] == "Wer erfand den Buchdruck?"
    assert stage.schema()["fields"] == [
        {"name": "title", "type": "string", "locale": "de", "stem": True},
        {"name": "text", "type": "string", "locale": "de", "stem": True},
    ]
    assert STAGE_DEFS["keyword-full"].params == stage.params


def test_plain_sends_only_what_it_needs() -> None:
    p = request_params(STAGE_DEFS["keyword-plain-71k"], "x", None, None)
    assert set(p) == {"q", "query_by", "per_page", "sort_by"}
    assert STAGE_DEFS["keyword-plain-71k"].schema()["fields"] == [
        {"name": "title", "type": "string"},
        {"name": "text", "type": "string"},
    ]


def test_vector_requests() -> None:
    vec = np.array([1.0, 0.0], dtype=np.float32)
    p = request_params(STAGE_DEFS["vector-71k"], "ignored", vec, None)
    assert p == {
        "q": "*",
        "per_page": 100,
        "exclude_fields": "embedding",
        "vector_query": "embedding:([1.0,0.0], k: 100)",
    }
    assert vector_only_params(STAGE_DEFS["hybrid-71k"], vec, 200)["vector_query"] == vector_literal(
        vec, k=100, ef=200
    )
    # float32 values survive the round trip through the literal exactly
    v = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    lit = vector_literal(v)
    back = np.array([float(x) for x in lit[len("embedding:([") : -2].split(",")], dtype=np.float32)
    assert np.array_equal(back, v)
