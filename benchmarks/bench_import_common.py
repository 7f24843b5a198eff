"""Synthetic German-like passages for the import and latency benchmarks (no real data needed).

Texts are drawn from the word list of the bundled sample (real German words), vectors are random
L2-normalised float32; ids are MIRACL-like ``<article>#<passage>`` in ascending order.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bench.data import Passage
from bench.data.bundled import load_sample


def vocabulary(limit: int = 20000) -> list[str]:
    words: dict[str, None] = {}
    for p in load_sample().corpus:
        for w in p.text.split():
            words.setdefault(w.strip(".,;:()\"'„“"), None)
            if len(words) >= limit:
                return [w for w in words if w]
    return [w for w in words if w]


def passages(n: int, *, seed: int = 0, words: int = 60) -> Iterator[Passage]:
    """``n`` passages, about ``words`` words each, ids 1#0, 1#1, ... (10 passages per article)."""
    vocab = np.array(vocabulary())
    rng = np.random.default_rng(seed)
    for i in range(n):
        w = vocab[rng.integers(0, len(vocab), words)]
        yield Passage(f"{i // 10 + 1}#{i % 10}", f"Artikel {i // 10 + 1}", " ".join(w.tolist()))


def vectors(n: int, dims: int = 1024, *, seed: int = 1) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dims)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def write_shards(folder: Path, n: int, per_shard: int = 250_000) -> None:
    """The full-corpus hub layout (``docs-<N>.jsonl.gz``) with ``n`` synthetic passages."""
    folder.mkdir(parents=True, exist_ok=True)
    fh = None
    for i, p in enumerate(passages(n, words=40)):
        if i % per_shard == 0:
            if fh is not None:
                fh.close()
            fh = gzip.open(
                folder / f"docs-{i // per_shard}.jsonl.gz", "wt", encoding="utf-8", compresslevel=1
            )
        assert fh is not None
        fh.write(json.dumps({"docid": p.docid, "title": p.title, "text": p.text}, ensure_ascii=False) + "\n")
    if fh is not None:
        fh.close()
