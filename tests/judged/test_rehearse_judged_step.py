"""The rehearsal's judged step: the packet from the stand-in's vector-71k run, a one-line stop at the judge
without ANTHROPIC_API_KEY, the judge run (loopback server) with one, the pitfalls refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.inputs.trec import write_run
from analysis.reporting.judged import CAVEAT, report_section
from bench.rehearse.judged import PITFALLS_REFUSED, judged_step
from tests.judged.judged_inputs import tiny_inputs
from tests.support.messages_api import MessagesServer


def rehearsal_dir(tmp_path: Path) -> tuple[Path, Path, dict[str, str], dict[str, str]]:
    groups, qrels, queries, texts = tiny_inputs()
    directory = tmp_path / "reh"
    run = {q: [(d, float(-i)) for i, d in enumerate(docs)] for q, docs in groups[0].run.items()}
    write_run(
        directory / "runs" / "vector-71k" / "minilm-standin@100.trec",
        run,
        tag="vector-71k/minilm-standin@100",
    )
    qrels_path = directory / "qrels.tsv"
    qrels_path.write_text("".join(f"{q}\t0\t{d}\t{r}\n" for q, j in qrels.items() for d, r in j.items()))
    return directory, qrels_path, queries, texts


def test_without_a_key_it_stops_at_the_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    directory, qrels_path, queries, texts = rehearsal_dir(tmp_path)
    logged: list[str] = []
    rec = judged_step(
        directory,
        ("vector-71k", "keyword-plain-71k"),
        ("minilm-standin",),
        qrels_path,
        queries,
        texts,
        log=logged.append,
    )
    assert rec["status"] == "stopped at the judge" and rec["pairs"] > 0
    assert (directory / "judged" / "packet.json").is_file() and (directory / "judged" / "key.json").is_file()
    assert len(logged) == 1 and "\n" not in logged[0] and "ANTHROPIC_API_KEY is not set" in logged[0]
    assert f"sends the {rec['pairs']} pairs" in logged[0] and "claude-opus-5-5" in logged[0]
    assert rec["lines"][-1] == PITFALLS_REFUSED and "Qwen3-Reranker-0.6B weights" in PITFALLS_REFUSED
    assert any("vector-71k/minilm-standin@100 in place of the plan's groups" in x for x in rec["lines"])
    assert any("only 6 candidate(s) for 15" in x for x in rec["lines"])  # short groups said so
    assert not (directory / "judged" / "labels.json").exists()
    # a resumed rehearsal prepares the same packet again without complaint
    again = judged_step(
        directory, ("vector-71k",), ("minilm-standin",), qrels_path, queries, texts, log=logged.append
    )
    assert again["pairs"] == rec["pairs"]


def test_with_a_key_it_judges_and_the_report_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory, qrels_path, queries, texts = rehearsal_dir(tmp_path)
    server = MessagesServer()
    try:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        rec = judged_step(
            directory, ("vector-71k",), ("minilm-standin",), qrels_path, queries, texts, log=lambda _: None
        )
    finally:
        server.close()
    assert rec["status"] == "judged" and rec["counts"]["judged"] == rec["pairs"] == len(server.requests)
    labels = json.loads((directory / "judged" / "labels.json").read_text())
    assert labels["judge_model"] == "claude-opus-5-5" and all(p["label"] == 1 for p in labels["pairs"])
    md = "\n".join(report_section(directory))
    assert "## Judged sample of unjudged passages" in md and CAVEAT in md


def test_without_the_vector_run_it_is_refused(tmp_path: Path) -> None:
    directory, qrels_path, queries, texts = rehearsal_dir(tmp_path)
    rec = judged_step(
        directory, ("keyword-plain-71k",), ("minilm-standin",), qrels_path, queries, texts, log=lambda _: None
    )
    assert rec["status"] == "refused" and "vector-71k run is missing" in rec["lines"][0]
    assert not (directory / "judged").exists()
