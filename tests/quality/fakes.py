"""A fast, deterministic fake adapter and tiny study inputs for the quality-phase tests."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from analysis.trec import write_run
from bench.rerankers.protocol import Reranker, RerankerMeta, ScoreResult, make_result


class FakeReranker:
    """Pointwise: score = a hash of (query, passage) mapped to [0, 1) in float32 (some ties on purpose).
    Listwise variant: the score also depends on the number of passages (as a listwise model may)."""

    def __init__(self, model_id: str = "fake", *, listwise: bool = False, fail_on: str | None = None) -> None:
        self._meta = RerankerMeta(
            id=model_id,
            model=f"test/{model_id}",
            revision="0" * 40,
            dtype="float32",
            device="cpu",
            chunk_size=None,
            listwise=listwise,
        )
        self.fail_on = fail_on
        self.calls = 0

    @property
    def meta(self) -> RerankerMeta:
        return self._meta

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        self.calls += 1
        if self.fail_on is not None and self.fail_on in query:
            raise RuntimeError(f"simulated failure on {query!r}")
        out = []
        for p in passages:
            h = hashlib.sha256(f"{self._meta.id}|{query}|{p}".encode()).digest()
            v = int.from_bytes(h[:2], "big") / 2**16 * 0.999  # coarse -> ties happen
            if self._meta.listwise:
                v += len(passages) / 1000
            out.append(v)
        return make_result(
            np.asarray(out, dtype=np.float32),
            max_input_tokens=max((len(p.split()) for p in passages), default=0),
            truncated_pairs=0,
            chunk_size=len(passages),
        )


def loader(fail_on: str | None = None) -> object:
    def load(model_id: str) -> Reranker:
        return FakeReranker(model_id, listwise=model_id.startswith("list"), fail_on=fail_on)

    return load


def make_inputs(
    root: Path,
    *,
    n_queries: int = 6,
    n_docs: int = 120,
    stages: Sequence[str] = ("s1", "s2"),
    depth: int = 100,
) -> tuple[dict[str, Path], dict[str, str], dict[str, str]]:
    """First-stage run files (stage -> path), queries and passage texts for a tiny study."""
    queries = {f"{i}#0": f"frage {i}" for i in range(n_queries)}
    texts = {f"{d}#0": f"passage {d} " + "wort " * (d % 7) for d in range(n_docs)}
    docids = list(texts)
    paths: dict[str, Path] = {}
    for si, stage in enumerate(stages):
        run = {}
        for qi, q in enumerate(queries):
            perm = np.random.default_rng(1000 * si + qi).permutation(n_docs)[:depth]
            order = [docids[j] for j in perm.tolist()]
            run[q] = [(d, float(depth - r)) for r, d in enumerate(order)]
        path = root / "first-stage" / f"{stage}.trec"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_run(path, run, tag=f"first-stage/{stage}")
        paths[stage] = path
    return paths, queries, texts
