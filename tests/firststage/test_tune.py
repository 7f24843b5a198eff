"""The ef rule against the real 0.24.1, which ignores vector_query ef."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.core.errors import BenchError
from bench.data import Passage
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.embed import CachedEmbeddings
from bench.firststage.embed_cache import EmbeddingCache
from bench.firststage.exact import exact_top_k, overlap_at_k
from bench.firststage.features import StageRefused
from bench.firststage.importer import import_passages
from bench.firststage.queries import vector_top_ids
from bench.firststage.server import TypesenseServer
from bench.firststage.tune import choose_ef

from .conftest import HashEmbedder

pytestmark = pytest.mark.typesense


@pytest.fixture(scope="module")
def loaded(
    server: TypesenseServer,
    small: tuple[dict[str, str], list[Passage], Path],
    tmp_path_factory: pytest.TempPathFactory,
):  # type: ignore[no-untyped-def]
    queries, passages, _ = small
    stage = STAGE_DEFS["vector-71k"]
    emb = CachedEmbeddings(HashEmbedder(dims=32), EmbeddingCache(tmp_path_factory.mktemp("c") / "e.sqlite"))
    server.request("DELETE", f"/collections/{stage.collection}", ok=(200, 404))
    docs = emb.embed([p.passage_text for p in passages])

    def build(batch: list[Passage], start: int) -> list[dict]:  # type: ignore[type-arg]
        return [{"id": p.docid, "embedding": docs[start + i].tolist()} for i, p in enumerate(batch)]

    import_passages(
        server, stage.schema(32), passages, checkpoint=tmp_path_factory.mktemp("k") / "c.json", build=build
    )
    qids = list(queries)
    q = emb.embed([queries[x] for x in qids], prompt="query: ")
    position = {p.docid: i for i, p in enumerate(passages)}
    exact = [[passages[i].docid for i in row] for row in exact_top_k(q, docs, 100)]
    return stage, dict(zip(qids, q, strict=True)), position, exact


def test_overlap_at_server_default_is_recorded(server: TypesenseServer, loaded) -> None:  # type: ignore[no-untyped-def]
    stage, qvecs, position, exact = loaded
    choice = choose_ef(
        "vector-71k", server.version, lambda e: vector_top_ids(server, stage, qvecs, e, position), exact
    )
    assert (
        choice.ef is None and not choice.ef_sent and choice.steps == [{"ef": None, "overlap": choice.overlap}]
    )
    assert choice.overlap >= 0.99


def test_refused_when_ef_would_be_needed(server: TypesenseServer, loaded) -> None:  # type: ignore[no-untyped-def]
    stage, qvecs, position, exact = loaded
    with pytest.raises(StageRefused) as info:
        choose_ef(
            "vector-71k",
            server.version,
            lambda e: vector_top_ids(server, stage, qvecs, e, position),
            exact,
            target=1.01,
        )
    assert (info.value.feature, info.value.first_version) == ("ef", "26.0")


def test_loop_stops_when_ef_changes_nothing(server: TypesenseServer, loaded) -> None:  # type: ignore[no-untyped-def]
    stage, qvecs, position, exact = loaded
    sent: list[int | None] = []

    def measure(ef: int | None) -> list[list[str]]:
        sent.append(ef)
        return vector_top_ids(server, stage, qvecs, ef, position)

    # force sending ef to a server that ignores it, with a target it cannot reach
    with pytest.raises(BenchError, match="changed no result"):
        choose_ef("vector-71k", server.version, measure, exact, target=1.01, send_ef=True)
    assert sent == [100, 200]  # stopped at the first unchanged step, not the whole ladder


def test_loop_climbs_until_target() -> None:
    exact = [["a", "b", "c"]]
    answers = {100: [["a", "x", "y"]], 200: [["a", "b", "y"]], 400: [["a", "b", "c"]]}
    choice = choose_ef("vector-71k", "30.2", lambda e: answers[e or 0], exact)
    assert choice.ef == 400 and choice.overlap == 1.0 and [s["ef"] for s in choice.steps] == [100, 200, 400]


def test_exact_ties_by_row_order() -> None:
    docs = np.array([[1, 0], [0, 1], [1, 0], [1, 0]], dtype=np.float32)
    assert exact_top_k(np.array([[1, 0]], dtype=np.float32), docs, 3).tolist() == [[0, 2, 3]]
    assert overlap_at_k([["a", "b"]], [["b", "c"]], 100) == 0.5
