"""The study's inputs for the quality phase: MIRACL de dev queries and the passage texts of the candidates.

Plan section "Data": passage text is ``title + "\\n" + text`` everywhere. The 71k corpus is read whole
(``bench.data.data_hub.read_corpus_71k``); the full corpus (15.9 M passages) is streamed once and only the
frozen candidates' passages are kept. Texts are keyed by (corpus, docid): a docid of the 71k corpus and
the same docid of the full corpus are different passages as far as the rerankers are concerned. A
candidate id missing from its corpus is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.core import plan
from bench.core.errors import BenchError
from bench.core.plan import CORPUS_71K, CORPUS_FULL, CORPUS_FULL_PASSAGES, MIRACL, STAGES
from bench.core.progress import Progress
from bench.data import Passage
from bench.data import hub as data_hub
from bench.data.miracl import hub_topics_and_qrels
from bench.integrity import hub as integrity_hub
from bench.quality.candidates import Candidates


def study_queries() -> tuple[dict[str, str], Path]:
    """(queries, qrels path) of MIRACL de dev from the pinned ``miracl/miracl`` snapshot."""
    return hub_topics_and_qrels(integrity_hub.snapshot_dir(MIRACL))


def _keep(passages: Iterable[Passage], wanted: set[str], label: str, total: int | None) -> dict[str, str]:
    out: dict[str, str] = {}
    with Progress(label, total, "passages", interval=10.0) as progress:
        for p in passages:
            if p.docid in wanted:
                out[p.docid] = p.passage_text
            progress.advance()
    return out


@dataclass(frozen=True)
class StageTexts:
    """Passage texts keyed by (corpus, docid): a stage reads only its own corpus's texts, so what the 71k
    stages' rerankers see never depends on which other stages (the full corpus) are in the session."""

    by_corpus: Mapping[str, Mapping[str, str]]  # corpus ("71k", "full") -> docid -> passage text
    corpus_of: Mapping[str, str]  # stage -> corpus

    def for_stage(self, stage: str) -> Mapping[str, str]:
        return self.by_corpus[self.corpus_of[stage]]


def candidate_texts(candidates: Candidates) -> StageTexts:
    """(corpus, docid) -> passage text for every frozen candidate, read from the stage's own corpus."""
    need: dict[str, set[str]] = {"71k": set(), "full": set()}
    for stage, lists in candidates.lists.items():
        for docids in lists.values():
            need[STAGES[stage].corpus].update(docids)
    texts: dict[str, dict[str, str]] = {"71k": {}, "full": {}}
    if need["71k"]:
        corpus = data_hub.read_corpus_71k(integrity_hub.snapshot_dir(CORPUS_71K))
        texts["71k"] = _keep(corpus, need["71k"], "candidate texts (71k)", plan.CORPUS_71K_PASSAGES)
    if need["full"]:
        full = data_hub.iter_corpus_full(integrity_hub.snapshot_dir(CORPUS_FULL))
        texts["full"] = _keep(full, need["full"], "candidate texts (full)", CORPUS_FULL_PASSAGES)
    for corpus_name, wanted in need.items():
        missing = wanted - set(texts[corpus_name])
        if missing:
            raise BenchError(
                f"{len(missing)} candidate passage id(s) are not in the {corpus_name} corpus "
                f"(first: {sorted(missing)[0]!r}); "
                "the first-stage runs and the corpus snapshots do not belong together"
            )
    return StageTexts(texts, {stage: STAGES[stage].corpus for stage in candidates.lists})
