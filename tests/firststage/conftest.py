"""Fixtures for the first-stage tests: the session's real Typesense 0.24.1 (empty for each module), a small
real German sample, a deterministic fake embedder (fast), and the real MiniLM stand-in with a session-wide
embedding cache."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from bench.data import Passage, sort_passages
from bench.data.bundled import Sample, load_sample
from bench.firststage.embed import CachedEmbeddings, MiniLMEmbedder, l2_normalise
from bench.firststage.embed_cache import EmbeddingCache
from bench.firststage.server import TypesenseServer
from tests.support.typesense import drop_collections

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the hub is unreachable here: never wait for it


class HashEmbedder:
    """Deterministic pseudo-embeddings from the text's SHA-256 (no model): fast stage plumbing tests."""

    def __init__(self, dims: int = 16, model: str = "test/hash", revision: str = "1") -> None:
        self.model, self.revision, self.dims, self.device = model, revision, dims, "cpu"
        self.calls: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.extend(texts)
        rows = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            rows.append(np.random.default_rng(seed).standard_normal(self.dims))
        return l2_normalise(np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dims))


@pytest.fixture(scope="session")
def sample() -> Sample:
    return load_sample()


@pytest.fixture(scope="session")
def small(sample: Sample) -> tuple[dict[str, str], list[Passage], Path]:
    """30 dev queries, their judged passages and 300 NoMIRACL passages (real German text), in import order."""
    qids = sorted(sample.queries)[:30]
    queries = {q: sample.queries[q] for q in qids}
    wanted: set[str] = set()
    for line in sample.qrels_path.read_text(encoding="utf-8").splitlines():
        qid, _, docid, _ = line.split("\t")
        if qid in queries:
            wanted.add(docid)
    passages = [p for p in sample.judged if p.docid in wanted] + sample.nomiracl[:300]
    return queries, sort_passages(passages), sample.qrels_path


@pytest.fixture(scope="module")
def server(typesense: TypesenseServer) -> Iterator[TypesenseServer]:
    """The session's server (tests/conftest.py) with no collections, as a fresh one would be; what the
    module made is dropped when it ends."""
    drop_collections(typesense)
    yield typesense
    drop_collections(typesense)


@pytest.fixture(scope="session")
def minilm_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CachedEmbeddings]:
    cache = EmbeddingCache(tmp_path_factory.mktemp("emb") / "embeddings.sqlite")
    yield CachedEmbeddings(MiniLMEmbedder(), cache)
    cache.close()


@pytest.fixture(scope="session")
def tiny(sample: Sample) -> tuple[dict[str, str], list[Passage], Path]:
    """4 dev queries, their judged passages and 20 NoMIRACL passages: small enough to embed with MiniLM."""
    qids = sorted(sample.queries)[:4]
    wanted = set()
    for line in sample.qrels_path.read_text(encoding="utf-8").splitlines():
        qid, _, docid, _ = line.split("\t")
        if qid in qids:
            wanted.add(docid)
    passages = [p for p in sample.judged if p.docid in wanted] + sample.nomiracl[:20]
    return {q: sample.queries[q] for q in qids}, sort_passages(passages), sample.qrels_path
