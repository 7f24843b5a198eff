"""bench costs passage-tokens: the Voyage tokenizer from a local snapshot, a clear refusal without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.cli import cli
from bench.core.errors import BenchError
from bench.costs.tokens import FORMAT, load_voyage_tokenizer, passage_tokens_record


def word_tokenizer(path: Path) -> Path:
    """A word-level tokenizer.json (real `tokenizers` file) with [CLS]/[SEP] added around each text."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "Berlin": 3, "ist": 4, "die": 5, "Hauptstadt": 6}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    path.mkdir(parents=True, exist_ok=True)
    tok.save(str(path / "tokenizer.json"))
    return path


def test_refuses_without_the_tokenizer(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match=r"voyageai/rerank-3 is not on this machine.*not use another one"):
        load_voyage_tokenizer("rerank-3", root=tmp_path)


def test_cli_refuses_before_anything_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_MODELS_DIR", str(tmp_path / "models"))
    out = tmp_path / "tokens.json"
    result = CliRunner().invoke(cli, ["costs", "passage-tokens", "--runs", str(tmp_path), "--out", str(out)])
    assert result.exit_code == 1 and "Hugging Face hub" in result.output and not out.exists()


def test_counts_with_the_snapshot_tokenizer(tmp_path: Path) -> None:
    word_tokenizer(tmp_path / "models--voyageai--rerank-3" / "snapshots" / "abc123")
    tok = load_voyage_tokenizer("rerank-3", root=tmp_path)
    assert tok.revision == "abc123" and len(tok.sha256) == 64
    texts = {"d1": "Berlin\nBerlin ist die Hauptstadt", "d2": "Hauptstadt\nist", "d3": "Berlin\nX"}
    candidates = {"hybrid-71k": {"q1": ("d1", "d2"), "q2": ("d2", "d3")}}
    record = passage_tokens_record(tok, candidates, texts, {"hybrid-71k": "f" * 64})
    stage = record["stages"]["hybrid-71k"]
    # distinct passages d1, d2, d3: 5 + 2, 2 + 2, 2 + 2 tokens ([CLS] and [SEP] counted, unknown words too)
    assert (stage["passages"], stage["total_tokens"], stage["mean_tokens"]) == (3, 15, 5.0)
    assert record["format"] == FORMAT and record["tokenizer"]["revision"] == "abc123"
    assert json.loads(json.dumps(record)) == record


def test_format_matches_the_analysis_reader() -> None:
    from analysis.costs.section import TOKENS_FORMAT

    assert FORMAT == TOKENS_FORMAT


def test_two_snapshots_need_a_revision(tmp_path: Path) -> None:
    for rev in ("a1", "b2"):
        word_tokenizer(tmp_path / "models--voyageai--rerank-3" / "snapshots" / rev)
    with pytest.raises(BenchError, match="several snapshots"):
        load_voyage_tokenizer("rerank-3", root=tmp_path)
    assert load_voyage_tokenizer("rerank-3", root=tmp_path, revision="b2").revision == "b2"


def test_verifies_only_the_corpora_it_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Passage-tokens reads the first-stage runs and their passages, so the lock check
    covers the stages' corpora only (not the topics, not the 32 full-corpus shards for 71k stages); the
    verification itself is the real ``coverage.verify``, of the entries named."""
    import inspect

    import bench.records.guard
    from analysis.inputs.trec import write_run
    from bench.core.reads import corpus_reads

    assert (
        inspect.signature(bench.records.guard.preflight).parameters["lock_names"].default
        is inspect.Parameter.empty
    )
    word_tokenizer(tmp_path / "models" / "models--voyageai--rerank-3" / "snapshots" / "abc123")
    monkeypatch.setenv("BENCH_MODELS_DIR", str(tmp_path / "models"))
    runs = tmp_path / "runs"
    write_run(runs / "first-stage" / "hybrid-71k.trec", {"q1": [("d1", 2.0), ("d2", 1.0)]}, tag="fs")
    verified: list[list[str] | None] = []
    monkeypatch.setattr("bench.records.codeversion.require_clean_code", lambda root: {})
    monkeypatch.setattr("bench.records.guard.require_plan_stamp", lambda root: {"verdict": "pending"})
    monkeypatch.setattr(
        "bench.integrity.coverage.verify", lambda root, names, lock_path: verified.append(names) or {}
    )
    monkeypatch.setattr("bench.integrity.enforce.activate", lambda *a: None)
    monkeypatch.setattr("bench.records.guard.sha256_file", lambda p: "0" * 64)
    monkeypatch.setattr("bench.quality.inputs.candidate_texts", lambda c: {"d1": "Berlin ist", "d2": "die"})
    out = tmp_path / "tokens.json"
    args = ["costs", "passage-tokens", "--runs", str(runs), "--stage", "hybrid-71k", "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert verified == [["corpus-71k"]]
    assert json.loads(out.read_text())["manifest"]["extra"]["preflight"]["verified_entries"] == {}
    assert corpus_reads(["keyword-full", "hybrid-71k"]) == ["corpus-71k", "corpus-full"]
