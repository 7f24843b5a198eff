"""On-disk embedding cache: SQLite under ``bench.core.paths.cache_dir()``, keyed by (model, revision, SHA-256
of the exact text embedded). Vectors are stored as float32 bytes with their dimension; a stored vector whose
dimension differs from the embedder's is an error, never silently reused.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.core.errors import BenchError
from bench.core.paths import cache_dir

_SCHEMA = """CREATE TABLE IF NOT EXISTS embeddings (
  model TEXT NOT NULL, revision TEXT NOT NULL, text_sha256 TEXT NOT NULL, dims INTEGER NOT NULL,
  vector BLOB NOT NULL, PRIMARY KEY (model, revision, text_sha256))"""


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    @classmethod
    def default(cls) -> EmbeddingCache:
        return cls(cache_dir() / "embeddings.sqlite")

    def close(self) -> None:
        self._db.close()

    def get_many(self, model: str, revision: str, dims: int, texts: Sequence[str]) -> list[np.ndarray | None]:
        keys = [text_key(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT text_sha256, dims, vector FROM embeddings WHERE model=? AND revision=? "
                f"AND text_sha256 IN ({marks})",
                (model, revision, *chunk),
            ).fetchall()
            for sha, d, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if d != dims or vec.shape[0] != dims:
                    raise BenchError(
                        f"embedding cache {self.path}: {model}@{revision} has a {d}-dim vector, the embedder "
                        f"gives {dims}; delete the cache file or fix the model"
                    )
                found[sha] = vec
        return [found.get(k) for k in keys]

    def put_many(self, model: str, revision: str, dims: int, texts: Sequence[str], vecs: np.ndarray) -> None:
        if vecs.shape != (len(texts), dims):
            raise BenchError(f"embedding of shape {vecs.shape} does not fit {len(texts)} texts x {dims} dims")
        rows = [
            (model, revision, text_key(t), dims, np.ascontiguousarray(v, dtype=np.float32).tobytes())
            for t, v in zip(texts, vecs, strict=True)
        ]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?,?,?)", rows)
