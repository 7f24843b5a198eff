"""The rehearsal's reranker: the registry's ``minilm-standin`` with its passage vectors cached.

Why: minilm-standin is a bi-encoder (cosine of query and passage embeddings of all-MiniLM-L6-v2). Its passage
vectors do not depend on the query, and they are exactly the vectors the rehearsal's vector stage already
computed with the same model (the stand-in for Arctic) and stored in the embedding cache
(``bench.firststage.embed_cache``, keyed by model, revision and text). Re-encoding every candidate of every
query would cost about 61,000 passage encodings for 305 queries and two stages, roughly an hour on two CPU
cores; with the cache, a call encodes only texts not seen before. Query vectors go through the same cache
(a query is scored at three depths on two stages; the vector stage has usually embedded it already), and
token counts for the record are kept per text in the process. The scores are the same cosine up to float32
rounding of batch composition.

Consequence, stated in the report: the stand-in's latency is a cache look-up (plus the query's encoding
the first time it is seen), not the latency of a cross-encoder reading k passages. ``bench rehearse
--no-passage-cache`` uses the registry adapter unchanged (every call encodes all k passages) for an honest
per-call timing of that model.

Everything else is the registry adapter's: its meta (id, revision, packages) and its record (token counts
of the real model inputs, truncation) come from the same tokenizer and ``max_seq_length``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.errors import BenchError
from bench.firststage.embed_cache import EmbeddingCache
from bench.rerankers.protocol import Reranker, RerankerMeta, ScoreResult, make_result
from bench.rerankers.standin import ST_CONFIG, STANDIN_MAX_SEQ, published_max_seq, standin_revision

PASSAGE_CACHE_NOTE = (
    "passage vectors from the embedding cache (same model and revision as the rehearsal's vector stage); "
    "a call encodes only a query or passages not seen before"
)


@dataclass(frozen=True)
class StandinCut:
    """The MiniLM stand-ins' input cut in one rehearsal: which configuration applied, and the other one."""

    config: str  # "bundled" or "published"
    max_seq: int

    def describe(self) -> str:
        """One sentence for the report naming both configurations and which one applied."""
        bundled = f"the bundled sample's {STANDIN_MAX_SEQ} tokens (its time budget, DEVIATIONS.md D-041)"
        published = (
            f"the model's published configuration, sentence-transformers' max_seq_length from the "
            f"package's {ST_CONFIG} (used with --dataset, so that a published score can be "
            "reproduced)"
        )
        applied, other = (bundled, published) if self.config == "bundled" else (published, bundled)
        return f"MiniLM stand-ins' input cut: {self.max_seq} tokens, {applied}; not applied: {other}."


def standin_cut(dataset: Path | None) -> StandinCut:
    """The bundled rehearsal keeps the budget cut; ``--dataset`` embeds as the model is published."""
    if dataset is None:
        return StandinCut("bundled", STANDIN_MAX_SEQ)
    return StandinCut("published", published_max_seq())


# Where a rehearsal folder records the revision (hence the cut) its MiniLM stand-ins ran with: the reranker
# in the study manifest, the embedder in the vector stages' records.
CUT_RECORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("manifest.json", ("models", "minilm-standin", "meta", "revision")),
    ("first-stage/vector-71k.json", ("embeddings", "revision")),
    ("first-stage/hybrid-71k.json", ("embeddings", "revision")),
)


def check_resumed_cut(directory: Path, cut: StandinCut, fix: str) -> None:
    """A resume keeps what the folder's earlier sessions ran: a stand-in revision recorded there (a
    ``--dataset`` folder begun before D-045 ran at 128) that is not ``cut``'s is refused, never mixed with
    this cut's; ``fix`` is the command that starts over. A record not written yet has nothing to disagree."""
    expected = standin_revision(cut.max_seq)
    for rel, keys in CUT_RECORDS:
        path = directory / rel
        try:
            value: Any = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            raise BenchError(f"{path}: not valid JSON ({exc}); start a new rehearsal: `{fix}`") from exc
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None and value != expected:
            raise BenchError(
                f"{path}: {'.'.join(keys)} is {value!r}, not this rehearsal's {expected!r} "
                f"({cut.config} cut); start a new rehearsal: `{fix}`"
            )


class CachedPassageStandin:
    """``Reranker`` protocol over the registry's minilm-standin, passage vectors memoised on disk."""

    def __init__(self, inner: Reranker, cache: EmbeddingCache) -> None:
        model: Any = getattr(inner, "model", None)
        if model is None or not hasattr(model, "encode") or not hasattr(model, "tokenizer"):
            raise TypeError(f"{inner.meta.id} has no sentence-transformers model to share vectors with")
        self._inner = inner
        self._model = model
        self._cache = cache
        dims = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self._dims = int(dims())
        self._max_seq = int(inner.meta.max_length or model.max_seq_length or 256)
        self._meta = replace(
            inner.meta,
            implementation=f"{inner.meta.implementation}; {PASSAGE_CACHE_NOTE}",
            extra={**dict(inner.meta.extra), "passage_cache": str(cache.path)},
        )
        self.encoded_passages = 0  # passages actually encoded (cache misses)
        self._lengths: dict[str, int] = {}  # token count per text, with special tokens (for the record)

    @property
    def meta(self) -> RerankerMeta:
        return self._meta

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        out = self._model.encode(
            list(texts),
            batch_size=max(1, len(texts)),
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self._dims)

    def _token_lengths(self, texts: Sequence[str]) -> list[int]:
        new = sorted({t for t in texts if t not in self._lengths})
        if new:
            ids = self._model.tokenizer(new, add_special_tokens=True)["input_ids"]
            self._lengths.update(zip(new, (len(x) for x in ids), strict=True))
        return [self._lengths[t] for t in texts]

    def _query_vector(self, query: str) -> np.ndarray:
        meta = self._meta
        found = self._cache.get_many(meta.model, meta.revision or "", self._dims, [query])[0]
        if found is not None:
            return np.asarray(found, dtype=np.float32)
        q = self._encode([query])
        self._cache.put_many(meta.model, meta.revision or "", self._dims, [query], q)
        return q[0]

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        docs = list(passages)
        if not docs:
            return make_result([], max_input_tokens=0, truncated_pairs=0, chunk_size=0)
        meta = self._meta
        found = self._cache.get_many(meta.model, meta.revision or "", self._dims, docs)
        missing = sorted({d for d, v in zip(docs, found, strict=True) if v is None})
        if missing:
            fresh = self._encode(missing)
            self._cache.put_many(meta.model, meta.revision or "", self._dims, missing, fresh)
            self.encoded_passages += len(missing)
            by_text = dict(zip(missing, fresh, strict=True))
            found = [v if v is not None else by_text[d] for d, v in zip(docs, found, strict=True)]
        matrix = np.stack([np.asarray(v, dtype=np.float32) for v in found])
        q = self._query_vector(query)
        scores = (matrix @ q).astype(np.float32)
        lengths = self._token_lengths([*docs, query])
        q_len = lengths.pop()
        cut = sum(n > self._max_seq for n in lengths) + (len(docs) if q_len > self._max_seq else 0)
        return make_result(
            scores,
            max_input_tokens=max(min(n, self._max_seq) for n in [*lengths, q_len]),
            truncated_pairs=min(cut, len(docs)),
            chunk_size=len(missing) if missing else 0,
        )
