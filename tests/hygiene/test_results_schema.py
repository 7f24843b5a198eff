"""Committed result and run files hold ids and numbers only (plan section "Reproducibility and licences"):
whatever is committed under results/ and runs/ passes the audit's row-7 rule, and the rule
refuses text keys, query texts, passage texts, malformed runs and stray files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.audit.committed import RESULTS, RUNS, file_problems, known_texts, tracked


@pytest.fixture(scope="module")
def texts(repo_root: Path) -> tuple[list[str], set[str]]:
    return known_texts(repo_root)


def test_whatever_is_committed_holds_ids_and_numbers_only(
    repo_root: Path, texts: tuple[list[str], set[str]]
) -> None:
    files = tracked(repo_root, RUNS) + tracked(repo_root, RESULTS)
    assert {"runs/README.md", "runs/LICENSE", "results/README.md", "results/LICENSE"} <= set(files)
    problems = [p for rel in files for p in file_problems(rel, (repo_root / rel).read_bytes(), *texts)]
    assert problems == []


def test_the_rule_can_fail(texts: tuple[list[str], set[str]]) -> None:
    queries, prefixes = texts
    assert len(queries) == 305 and len(prefixes) > 7000  # the bundled sample is what it is checked against
    query = queries[0]
    passage = next(iter(sorted(prefixes)))
    ok = json.dumps({"stage": "hybrid-71k", "runs": [{"model": "bge-v2-m3", "means": {"ndcg@10": 0.5}}]})
    only = "only ids and numbers belong here"
    trec = "not a TREC run line (query Q0 passage rank score tag)"
    allowed = "allowed here: .csv, .json, .jsonl, .md, .png, .tsv, README.md, LICENSE"
    cases = {
        "results/quality/ok.json": (ok, []),
        "results/judged/a.json": (
            json.dumps({"pairs": [{"qid": "1", "text": "x y"}]}),
            [f"results/judged/a.json: key /pairs/0/text holds text; {only}"],
        ),
        "results/judged/b.jsonl": (
            json.dumps({"q": query}) + "\n",
            [f"results/judged/b.jsonl: contains the text of a query ({query[:40]!r}...)"],
        ),
        "results/judged/c.json": (
            json.dumps({"note": f"see {passage} and more"}),
            ["results/judged/c.json: contains passage text"],
        ),
        "runs/vector-71k/x@100.trec": (
            "1 Q0 d1 1 0.5 vector-71k/x@100\n1 Q0 d2 two 0.4 t\n",
            [f"runs/vector-71k/x@100.trec line 2: {trec}"],
        ),
        # a plain run (one pattern over the file, bench.audit.committed.plain_run) and one that a column's
        # no-break space and a carriage return send through the line-by-line check: both fine
        "runs/vector-71k/y@20.trec": (
            "1 Q0 d1 1 0.5 vector-71k/y@20\n1\tQ0 d2 2 -1e-3 vector-71k/y@20\n",
            [],
        ),
        "runs/vector-71k/z@20.trec": ("1 Q0 d1 1 0.5 t\r\n1 Q0 d\u00a0x 2 .5 t\n", []),
        "results/quality/x.json~": (
            "{}",
            [f"results/quality/x.json~: stray file ({allowed}); remove it or move it out"],
        ),
        "results/broken.json": ('{"a": ', None),
    }
    for rel, (content, expected) in cases.items():
        got = file_problems(rel, content.encode(), queries, prefixes)
        if expected is None:
            assert len(got) == 1 and got[0].startswith(f"{rel}: not valid JSON"), got
        else:
            assert got == expected, rel
