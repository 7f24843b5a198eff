"""The run files bench's quality phase writes satisfy the reordering invariant that
``analysis report`` and ``bench audit`` check (``analysis.inputs.reordering``): both ways the plan makes a
depth-k run, the pointwise depths 20 and 50 derived from the depth-100 scores and jina's separate call per
depth (the listwise fake), on first stages with more than 100 candidates, fewer than k, and a query
missing."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from analysis.inputs.reordering import check_reordering, read_ids, reordering_break
from analysis.inputs.trec import TrecFormatError, read_run, write_run
from bench.core.journal import Journal
from bench.quality.candidates import freeze
from bench.quality.phase import PhaseSpec, run_phase
from bench.quality.runs import write_runs
from tests.support.fakes import FakeReranker

LENGTHS = {"0#0": 130, "1#0": 100, "2#0": 7, "3#0": 42, "4#0": 1}  # candidates each query's first stage found
SPEC = PhaseSpec(
    stages=("s1",), models=("point", "listy"), depths=(20, 50, 100), per_depth=frozenset({"listy"})
)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("reorder")
    texts = {f"{d}#0": f"passage {d} " + "wort " * (d % 7) for d in range(200)}
    docids = list(texts)
    run = {}
    for qi, (q, n) in enumerate(LENGTHS.items()):
        perm = np.random.default_rng(qi).permutation(len(docids))[:n]
        run[q] = [(docids[j], float(n - r)) for r, j in enumerate(perm.tolist())]
    first = tmp / "runs" / "first-stage" / "s1.trec"
    write_run(first, run, tag="first-stage/s1")
    queries = {q: f"frage {q}" for q in LENGTHS}
    cands = freeze(tmp / "study", {"s1": first})

    def load(model: str) -> FakeReranker:
        return FakeReranker(model, listwise=model == "listy")

    with Journal(tmp / "study" / "journal.jsonl") as j:
        run_phase(j, cands, queries, texts, load, SPEC, stream=io.StringIO())
        write_runs(j, cands, SPEC, tmp / "runs")
    return tmp / "runs"


@pytest.mark.parametrize("model", ["point", "listy"])
@pytest.mark.parametrize("k", [20, 50, 100])
def test_bench_runs_hold_exactly_their_candidates(written: Path, model: str, k: int) -> None:
    first = read_ids(written / "first-stage" / "s1.trec")
    path = written / "s1" / f"{model}@{k}.trec"
    run = read_ids(path)
    assert reordering_break(first, run, k) is None
    check_reordering(first, run, k, run_path=path, first_name="first-stage/s1.trec")  # does not raise
    # what the rule asks, seen directly: 100 of 130 candidates, all 7 of a short list, the tail in order
    held = {
        q: [run.docid(i) for i in range(int(run.offsets[n]), int(run.offsets[n + 1]))]
        for n, q in enumerate(run.qids)
    }
    firsts = {
        q: [first.docid(i) for i in range(int(first.offsets[n]), int(first.offsets[n + 1]))]
        for n, q in enumerate(first.qids)
    }
    for q, docs in held.items():
        assert len(docs) == min(LENGTHS[q], 100)
        assert sorted(docs[:k]) == sorted(firsts[q][:k]) and docs[k:] == firsts[q][k:100]


def test_listwise_scores_differ_by_depth_and_still_pass(written: Path) -> None:
    """The listwise fake's scores depend on the list it is given, so its depth-20 run is its own call's
    ordering, not a cut of the depth-100 one (the pointwise fake's is); the invariant holds for both."""
    for model, same in (("listy", False), ("point", True)):
        top20 = read_run(written / "s1" / f"{model}@20.trec")["0#0"][:20]
        at100 = dict(read_run(written / "s1" / f"{model}@100.trec")["0#0"])
        assert all((at100[d] == s) is same for d, s in top20)


def test_a_run_of_the_wrong_depth_is_refused(written: Path) -> None:
    """A depth-100 run named as depth 20: its top 20 holds candidates from beyond rank 20."""
    first = read_ids(written / "first-stage" / "s1.trec")
    path = written / "s1" / "point@100.trec"
    with pytest.raises(TrecFormatError, match=r"beyond k = 20"):
        check_reordering(first, read_ids(path), 20, run_path=path, first_name="first-stage/s1.trec")
