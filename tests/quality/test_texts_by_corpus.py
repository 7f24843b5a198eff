"""Candidate texts are keyed by (corpus, docid): the 71k stages' reranker inputs do not depend on whether
keyword-full is in the session."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bench.core.journal import Journal
from bench.data import Passage
from bench.quality.candidates import Candidates
from bench.quality.inputs import candidate_texts
from bench.quality.phase import PhaseSpec, run_phase
from tests.support.fakes import FakeReranker

DOCS = ("100#0", "100#1", "200#0")


def _candidates(stages: tuple[str, ...]) -> Candidates:
    return Candidates(lists={s: {"q1": DOCS} for s in stages}, sha256={s: "0" * 64 for s in stages})


@pytest.fixture
def corpora(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same docids carry different texts in the two corpora (as a changed passage would)."""
    monkeypatch.setattr("bench.integrity.hub.snapshot_dir", lambda ds: Path("/nowhere"))
    monkeypatch.setattr(
        "bench.data.hub.read_corpus_71k", lambda snap: [Passage(d, "T", f"71k text of {d}") for d in DOCS]
    )
    monkeypatch.setattr(
        "bench.data.hub.iter_corpus_full",
        lambda snap: iter([Passage(d, "T", f"full text of {d}") for d in DOCS]),
    )


def _seen(tmp: Path, stages: tuple[str, ...]) -> dict[str, list[str]]:
    cands = _candidates(stages)
    texts = candidate_texts(cands)
    seen: dict[str, list[str]] = {}

    def recording(model: str) -> FakeReranker:
        return FakeReranker(model, on_call=lambda fake, query, passages: seen.update({query: list(passages)}))

    for stage in stages:  # the query text names the stage, so each stage's inputs are recorded apart
        spec = PhaseSpec(stages=(stage,), models=("m",), depths=(100,))
        with Journal(tmp / f"{'+'.join(stages)}-{stage}.jsonl") as j:
            run_phase(j, cands, {"q1": stage}, texts, recording, spec, stream=io.StringIO())
    return seen


def test_71k_stage_reads_71k_texts_with_or_without_keyword_full(tmp_path: Path, corpora: None) -> None:
    alone = _seen(tmp_path, ("hybrid-71k",))
    both = _seen(tmp_path, ("hybrid-71k", "keyword-full"))
    assert alone["hybrid-71k"] == [f"T\n71k text of {d}" for d in DOCS]
    assert both["hybrid-71k"] == alone["hybrid-71k"]
    assert both["keyword-full"] == [f"T\nfull text of {d}" for d in DOCS]


def test_texts_are_kept_per_corpus(corpora: None) -> None:
    texts = candidate_texts(_candidates(("vector-71k", "keyword-full")))
    assert texts.for_stage("vector-71k")["100#0"] == "T\n71k text of 100#0"
    assert texts.for_stage("keyword-full")["100#0"] == "T\nfull text of 100#0"
