"""The quality-phase tests' loader of the one fake adapter (``tests.support.fakes``) and tiny study inputs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from analysis.inputs.trec import write_run
from bench.rerankers.protocol import Reranker
from tests.support.fakes import FakeReranker


def loader(fail_on: str | None = None) -> object:
    """Pointwise fakes, listwise ones for model ids starting with "list"."""

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
