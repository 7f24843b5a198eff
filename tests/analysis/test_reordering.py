"""The reordering invariant: a reranked run at depth k holds exactly its first stage's
candidates, the top k reordered and the rest in first-stage order. The vectorised check
(``analysis.inputs.reordering``) is compared with a plain loop that states the rule on random valid and broken
runs; each kind of break has its own case; both run readers give the same ids."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis.inputs.reordering import CandidateIndex, RankedIds, check_reordering, read_ids, reordering_break
from analysis.inputs.trec import TrecFormatError, write_run

Run = dict[str, list[str]]


def ids(run: Run) -> RankedIds:
    """RankedIds of a run given as qid -> docids in rank order (through the reference reader's table)."""
    from analysis.inputs.trec import RunTable

    qids = tuple(sorted(run))
    docs = [d for q in qids for d in run[q]]
    offsets = np.cumsum([0, *(len(run[q]) for q in qids)]).astype(np.int64)
    return RankedIds.of_table(RunTable(qids, offsets, tuple(docs), np.zeros(len(docs))))


def loop_rule(first: Run, run: Run, k: int, depth: int = 100) -> tuple[str, int | None] | None:
    """The rule as the plan states it, one query at a time: (query, rank of the first break or None for a
    missing candidate), or None."""
    for q in sorted(run):
        got = run[q]
        cands = first.get(q, [])[:depth]
        for r, d in enumerate(got):
            if d not in cands:
                return q, r + 1
            if r < k and cands.index(d) >= k:
                return q, r + 1
            if r >= k and (r >= len(cands) or cands[r] != d):
                return q, r + 1
        if len(got) != len(cands):
            return q, None
    return None


def first_stage(rng: np.random.Generator, lengths: list[int]) -> Run:
    pool = [f"{i}#{j}" for i in range(60) for j in range(4)]  # 240 ids, shared between queries
    return {f"q{i}": [pool[j] for j in rng.permutation(len(pool))[:n]] for i, n in enumerate(lengths)}


def reranked(rng: np.random.Generator, first: Run, k: int, depth: int = 100) -> Run:
    out = {}
    for q, docs in first.items():
        cands = docs[:depth]
        head = [cands[i] for i in rng.permutation(min(k, len(cands)))]
        out[q] = head + cands[k:]
    return out


LENGTHS = [100, 130, 7, 100, 1, 60]  # a deep first stage, short ones, a single candidate


@pytest.mark.parametrize("k", [1, 5, 20, 50, 100, 200])
def test_valid_runs_pass_at_every_depth(k: int) -> None:
    rng = np.random.default_rng(k)
    first = first_stage(rng, LENGTHS)
    run = reranked(rng, first, k)
    assert loop_rule(first, run, k) is None
    assert reordering_break(ids(first), ids(run), k) is None
    partial = {q: v for q, v in run.items() if q != "q3"}  # an incomplete run: not a break of this rule
    assert reordering_break(ids(first), ids(partial), k) is None


def _mutations(rng: np.random.Generator, first: Run, run: Run, k: int) -> Run:
    out = {q: list(v) for q, v in run.items()}
    q = sorted(out)[int(rng.integers(len(out)))]
    docs = out[q]
    kind = int(rng.integers(6))
    r = int(rng.integers(len(docs)))
    if kind == 0:
        docs[r] = "999999#9"  # a foreign id
    elif kind == 1 and len(first[q]) > 100:
        docs[r] = first[q][100 + int(rng.integers(len(first[q]) - 100))]  # beyond the 100 candidates
    elif kind == 2 and len(docs) > k:
        j = k + int(rng.integers(len(docs) - k))  # a candidate from beyond k swapped into the top k
        docs[min(r, k - 1)], docs[j] = docs[j], docs[min(r, k - 1)]
    elif kind == 3 and len(docs) > k + 1:
        j = k + int(rng.integers(len(docs) - k - 1))  # two tail ranks swapped
        docs[j], docs[j + 1] = docs[j + 1], docs[j]
    elif kind == 4:
        del docs[r]  # a candidate missing
    else:
        out["q-none"] = [first["q0"][0]]  # a query the first stage does not have
    return out


def test_vectorised_check_equals_the_loop_on_random_breaks() -> None:
    rng = np.random.default_rng(20261202)
    seen = 0
    for case in range(300):
        k = [5, 20, 50, 100][case % 4]
        first = first_stage(rng, LENGTHS)
        run = _mutations(rng, first, reranked(rng, first, k), k)
        want = loop_rule(first, run, k)
        got = reordering_break(ids(first), ids(run), k)
        assert ((got.qid, got.rank) if got else None) == want, (case, want, got)
        seen += want is not None
    assert seen > 200  # most mutations break the rule (a few, such as a swap within the top k, do not)


def test_each_break_is_worded() -> None:
    first = {"a": [f"{i}#0" for i in range(1, 121)], "b": ["x#0", "y#0"]}
    f = CandidateIndex.of(ids(first))
    good = {"a": first["a"][:20][::-1] + first["a"][20:100], "b": ["y#0", "x#0"]}
    assert reordering_break(f, ids(good), 20) is None

    def broken(**change: list[str]) -> tuple[str, int | None, str, str]:
        b = reordering_break(f, ids({**good, **change}), 20)
        assert b is not None
        return b.qid, b.rank, b.docid, b.why

    a = good["a"]
    foreign = "not a first-stage candidate of this query (a foreign id)"
    assert broken(a=[*a[:2], "777#0", *a[3:]]) == ("a", 3, "777#0", foreign)
    outside = "the first stage ranks it 110, outside its 100 candidates"
    assert broken(a=[*a[:4], "110#0", *a[5:]]) == ("a", 5, "110#0", outside)
    swapped = [*a[:4], a[30], *a[5:30], a[4], *a[31:]]  # rank 31 of the first stage into the top 20
    assert broken(a=swapped)[:3] == ("a", 5, "31#0") and "beyond k = 20" in broken(a=swapped)[3]
    tail = [*a[:40], a[41], a[40], *a[42:]]
    assert broken(a=tail)[:3] == ("a", 41, "42#0") and "keep the first stage's order" in broken(a=tail)[3]
    assert broken(a=a[:-1]) == (
        "a",
        None,
        "100#0",
        "the first stage's candidate at its rank 100 is missing (99 of its 100 candidates held)",
    )
    assert broken(b=["x#0", "y#0", "z#0"])[:3] == ("b", 3, "z#0")
    assert broken(c=["x#0"]) == ("c", 1, "x#0", "the first-stage run has no candidates for this query")
    # the first break in query order: query a's comes before query b's
    b = reordering_break(f, ids({"a": a[:-1], "b": ["x#0", "q#0"]}), 20)
    assert b is not None and b.qid == "a"


@pytest.mark.parametrize("reader", ["fast", "reference"])
def test_message_names_file_line_query_id_and_rank(
    tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANALYSIS_TREC_READER", reader)
    first = {"q1": [f"{i}#0" for i in range(1, 31)], "q2": [f"{i}#1" for i in range(1, 31)]}
    write_run(tmp_path / "first.trec", {q: [(d, -r) for r, d in enumerate(v)] for q, v in first.items()}, "f")
    run = {q: list(v) for q, v in first.items()}
    run["q2"][2] = "9#9"
    write_run(tmp_path / "m@20.trec", {q: [(d, -r) for r, d in enumerate(v)] for q, v in run.items()}, "m")
    with pytest.raises(TrecFormatError) as err:
        check_reordering(
            read_ids(tmp_path / "first.trec"),
            read_ids(tmp_path / "m@20.trec"),
            20,
            run_path=tmp_path / "m@20.trec",
            first_name="first-stage/s.trec",
        )
    message = str(err.value)
    assert message.startswith(
        f"{tmp_path / 'm@20.trec'}:33 (reranked run file): expected per query exactly "
        "the candidates of first-stage/s.trec"
    )
    assert "in query 'q2' rank 3 holds '9#9': not a first-stage candidate of this query (a foreign id)" in (
        message
    )
    assert "Fix: rerank the stage's committed first-stage run again" in message
    assert "\n" not in message
