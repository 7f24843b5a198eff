"""A small BEIR-layout dataset cut from the bundled real sample, and a shared embedding cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.data.bundled import load_sample

N_QUERIES = 5
N_OTHER = 20


def write_mini_beir(directory: Path, *, qrels: bool = True) -> Path:
    sample = load_sample()
    lines = [
        ln.split("\t") for ln in sample.qrels_path.read_text(encoding="utf-8").splitlines() if ln.strip()
    ]
    qids = sorted(sample.queries)[:N_QUERIES]
    judged = [(q, d, r) for q, _, d, r in lines if q in qids]
    wanted = {d for _, d, _ in judged}
    passages = [p for p in sample.judged if p.docid in wanted] + sample.nomiracl[:N_OTHER]
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for p in passages:
            fh.write(
                json.dumps({"_id": p.docid, "title": p.title, "text": p.text}, ensure_ascii=False) + "\n"
            )
    with (directory / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for q in qids:
            fh.write(json.dumps({"_id": q, "text": sample.queries[q]}, ensure_ascii=False) + "\n")
    if qrels:
        (directory / "qrels").mkdir(exist_ok=True)
        rows = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{r.strip()}" for q, d, r in judged]
        (directory / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return directory


@pytest.fixture(scope="session")
def mini_beir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mini_beir(tmp_path_factory.mktemp("mini-beir"))


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench-cache")
