"""Rehearsal only: exact (flat) search in place of raising ef, on the real Typesense 0.24.1.

0.24.1 ignores vector_query ``ef``; its default HNSW search misses the plan's 99 % top-100 overlap on a
few thousand random vectors. A rehearsal may then ask the server for exact search (``filter_by`` on an
always-1 field plus ``flat_search_cutoff``); the substitution must reach overlap 1.0 and be recorded, and
without the substitute (a measurement) the stage is refused naming ef.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.data import Passage
from bench.firststage.definitions import EXACT_FILTER_FIELD, STAGE_DEFS, ExactSubstitute, vector_options
from bench.firststage.exact import exact_top_k
from bench.firststage.features import StageRefused
from bench.firststage.importer import import_passages
from bench.firststage.queries import request_params, vector_top_ids
from bench.firststage.server import TypesenseServer
from bench.firststage.tune import choose_ef

N_DOCS, DIMS = 5000, 64


def test_choose_ef_substitutes_only_when_allowed_and_sufficient() -> None:
    exact = [["a", "b", "c"]]
    low, perfect = [["a", "x", "y"]], [["a", "b", "c"]]
    flat = ("flat", lambda: perfect)
    choice = choose_ef("vector-71k", "0.24.1", lambda e: low, exact, exact_substitute=flat)
    assert choice.substitute == "flat" and choice.overlap == 1.0 and choice.ef is None and not choice.ef_sent
    assert [s.get("substitute") for s in choice.steps] == [None, "flat"]
    assert choice.record()["substitute"] == "flat"
    with pytest.raises(StageRefused):  # the substitute misses the rule too
        choose_ef("vector-71k", "0.24.1", lambda e: low, exact, exact_substitute=("flat", lambda: low))
    with pytest.raises(StageRefused):  # a measurement passes no substitute
        choose_ef("vector-71k", "0.24.1", lambda e: low, exact)
    # the server default already meets the rule: no substitution, the substitute is never called
    called: list[int] = []

    def spy() -> list[list[str]]:
        called.append(1)
        return low

    ok = choose_ef("vector-71k", "0.24.1", lambda e: perfect, exact, exact_substitute=("flat", spy))
    assert ok.substitute is None and called == []


def test_request_carries_filter_and_cutoff() -> None:
    stage = STAGE_DEFS["vector-71k"]
    sub = ExactSubstitute.for_corpus(7402)
    p = request_params(stage, "ignored", np.ones(3, dtype=np.float32), None, sub)
    assert p["filter_by"] == f"{EXACT_FILTER_FIELD}:=1"
    assert p["vector_query"].endswith(", k: 100, flat_search_cutoff: 7403)")
    assert "flat_search_cutoff" not in vector_options(stage, None)
    assert stage.schema(8, exact_filter=True)["fields"][-1] == {"name": EXACT_FILTER_FIELD, "type": "int32"}
    assert all(f["name"] != EXACT_FILTER_FIELD for f in stage.schema(8)["fields"])


@pytest.fixture(scope="module")
def random_collection(server: TypesenseServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    stage = STAGE_DEFS["vector-71k"]
    rng = np.random.default_rng(20261009)
    docs = rng.standard_normal((N_DOCS, DIMS)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = rng.standard_normal((20, DIMS)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    passages = [Passage(f"{i + 1}#0", "", "") for i in range(N_DOCS)]
    server.request("DELETE", f"/collections/{stage.collection}", ok=(200, 404))

    def build(batch: list[Passage], start: int) -> list[dict[str, Any]]:
        return [
            {"id": p.docid, "embedding": docs[start + i].tolist(), EXACT_FILTER_FIELD: 1}
            for i, p in enumerate(batch)
        ]

    ckpt: Path = tmp_path_factory.mktemp("k") / "c.json"
    import_passages(server, stage.schema(DIMS, exact_filter=True), passages, checkpoint=ckpt, build=build)
    position = {p.docid: i for i, p in enumerate(passages)}
    exact = [[passages[i].docid for i in row] for row in exact_top_k(queries, docs, 100)]
    qvecs = {f"q{i}": q for i, q in enumerate(queries)}
    yield stage, qvecs, position, exact
    server.request("DELETE", f"/collections/{stage.collection}", ok=(200, 404))


@pytest.mark.typesense
def test_exact_substitute_on_the_real_server(server: TypesenseServer, random_collection: Any) -> None:
    stage, qvecs, position, exact = random_collection
    sub = ExactSubstitute.for_corpus(N_DOCS)

    def measure(ef: int | None) -> list[list[str]]:
        return vector_top_ids(server, stage, qvecs, ef, position)

    with pytest.raises(StageRefused) as info:  # measurement semantics: no substitute
        choose_ef(stage.id, server.version, measure, exact)
    assert info.value.feature == "ef"
    choice = choose_ef(
        stage.id,
        server.version,
        measure,
        exact,
        exact_substitute=(sub.label, lambda: vector_top_ids(server, stage, qvecs, None, position, sub)),
    )
    assert choice.steps[0]["overlap"] < 0.99  # the server default really misses the rule here
    assert choice.substitute == sub.label and choice.overlap == 1.0
