"""The study's inputs for the quality phase: MIRACL de dev queries and the passage texts of the candidates.

Plan section "Data": passage text is ``title + "\\n" + text`` everywhere. The 71k corpus is read whole
(``bench.data.hub.read_corpus_71k``); the full corpus (15.9 M passages) is streamed once and only the
frozen candidates' passages are kept. A candidate id missing from its corpus is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from bench.data import Passage
from bench.errors import BenchError
from bench.plan import CORPUS_71K, CORPUS_FULL, MIRACL, STAGES
from bench.progress import Progress
from bench.quality.candidates import Candidates


def study_queries() -> tuple[dict[str, str], Path]:
    """(queries, qrels path) of MIRACL de dev from the pinned ``miracl/miracl`` snapshot."""
    from bench.data.miracl import hub_topics_and_qrels
    from bench.integrity.hub import snapshot_dir

    return hub_topics_and_qrels(snapshot_dir(MIRACL))


def _keep(passages: Iterable[Passage], wanted: set[str], label: str, total: int | None) -> dict[str, str]:
    out: dict[str, str] = {}
    with Progress(label, total, "passages", interval=10.0) as progress:
        for p in passages:
            if p.docid in wanted:
                out[p.docid] = p.passage_text
            progress.advance()
    return out


def candidate_texts(candidates: Candidates) -> Mapping[str, str]:
    """docid -> passage text for every frozen candidate, read from the stage's corpus."""
    from bench.data.hub import iter_corpus_full, read_corpus_71k
    from bench.integrity.hub import snapshot_dir
    from bench.plan import CORPUS_71K_PASSAGES, CORPUS_FULL_PASSAGES

    need: dict[str, set[str]] = {"71k": set(), "full": set()}
    for stage, lists in candidates.lists.items():
        for docids in lists.values():
            need[STAGES[stage].corpus].update(docids)
    texts: dict[str, str] = {}
    if need["71k"]:
        corpus = read_corpus_71k(snapshot_dir(CORPUS_71K))
        texts.update(_keep(corpus, need["71k"], "candidate texts (71k)", CORPUS_71K_PASSAGES))
    if need["full"]:
        full = _keep(iter_corpus_full(snapshot_dir(CORPUS_FULL)), need["full"], "candidate texts (full)",
                     CORPUS_FULL_PASSAGES)  # fmt: skip
        texts.update(full)
    missing = (need["71k"] | need["full"]) - set(texts)
    if missing:
        raise BenchError(
            f"{len(missing)} candidate passage id(s) are not in their corpus "
            f"(first: {sorted(missing)[0]!r}); "
            "the first-stage runs and the corpus snapshots do not belong together"
        )
    return texts
