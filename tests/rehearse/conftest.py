"""A small BEIR-layout dataset cut from the bundled real sample, and a shared embedding cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.data.bundled import load_sample

N_QUERIES = 5
N_OTHER = 20


STOP_WORD_QUERY = ("stop-words-only", "Was ist das?")  # the keyword stage finds nothing for it (issue 21)


def write_mini_beir(
    directory: Path, *, qrels: bool = True, titles: bool = True, bad_query: bool = False
) -> Path:
    """``titles=False``: a corpus without titles (no ``title`` key); ``bad_query``: one more judged query made
    of stop words only, for which the keyword stage has no candidates."""
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
            row = {"_id": p.docid, "text": p.text}
            if titles:
                row["title"] = p.title
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    with (directory / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for q in qids:
            fh.write(json.dumps({"_id": q, "text": sample.queries[q]}, ensure_ascii=False) + "\n")
        if bad_query:
            fh.write(json.dumps({"_id": STOP_WORD_QUERY[0], "text": STOP_WORD_QUERY[1]}) + "\n")
    if qrels:
        (directory / "qrels").mkdir(exist_ok=True)
        rows = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{r.strip()}" for q, d, r in judged]
        if bad_query:
            rows.append(f"{STOP_WORD_QUERY[0]}\t{judged[0][1]}\t1")
        (directory / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return directory


@pytest.fixture(scope="session")
def mini_beir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mini_beir(tmp_path_factory.mktemp("mini-beir"))


@pytest.fixture(scope="session")
def mini_beir_bad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mini dataset without titles and with a query the keyword stage finds nothing for (issue 21)."""
    return write_mini_beir(tmp_path_factory.mktemp("mini-beir-bad"), titles=False, bad_query=True)


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench-cache")
