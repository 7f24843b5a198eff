"""Property tests of every plan metric against pytrec_eval and ir_measures.

Hypothesis draws small qrels and runs with what real files have and the readers must survive: tied scores,
graded labels (0-3), queries of the qrels the run lacks, queries without a relevant passage, run queries the
qrels lack, unjudged passages (also ones judged for another query) and queries with no candidates.

Which reference covers which measure (``_PYTREC`` and ``_IRM`` below); ir_measures 0.4.3's provider named:

* ndcg@10: pytrec_eval ``ndcg_cut_10``; ir_measures ``nDCG@10`` (pytrec_eval provider).
* ndcg'@10 (condensed): pytrec_eval ``ndcg_cut_10`` with ``judged_docs_only_flag`` (trec_eval ``-J``:
  unjudged passages removed first); ir_measures ``nDCG(judged_only=True)@10`` (pytrec_eval provider).
* hit@5, hit@10: pytrec_eval ``success_5``, ``success_10``; ir_measures ``Success@5``, ``Success@10``.
* recall@5, @10, @20: pytrec_eval ``recall_5``, ``recall_10``, ``recall_20``; ir_measures ``R@5/10/20``.
* mrr@10: pytrec_eval ``recip_rank`` of the run cut at rank 10; ir_measures ``RR@10`` (msmarco provider:
  MS MARCO's own Python evaluation script, an implementation independent of trec_eval).
* judged@10: trec_eval has no judged rate, so no pytrec_eval reference; ir_measures ``Judged@10`` (judged
  provider: OpenNIR's Python).

How our conventions are mapped onto theirs, so that every comparison is exact (tolerance 1e-12, float
summation order only; the plan's 1e-4 is not needed anywhere):

* **Absent query scores 0.** pytrec_eval leaves a query the run lacks out of its result: it is read as 0
  (``trec_eval -c``). ir_measures fills it with the measure's default, 0, itself. A query present with no
  candidates cannot be written in a TREC file; it is given to the references as absent (ir_measures'
  Judged would divide by zero on an empty ranking).
* **Tie rule.** Ours: the run's rank order (``analysis.stats.ranking.TIE_RULE``). trec_eval re-sorts by score
and
  breaks ties by docid descending; ir_measures' msmarco and judged providers by docid ascending. Two mappings:
  *rank-faithful*, each reference gets ``-rank`` as the score (no ties left, our order is the only order);
  *own order*, our run lists tied passages in the reference's own tie order and the reference gets the raw
  scores (this checks that our rank order and the scores written beside it agree with the reference's sort).
* **judged@10** counts the empty places of a run shorter than 10 as unjudged (divides by 10); ir_measures'
  ``Judged@10`` divides by the run's length there. Compared as judged counts: ``10 * ours`` against
  ``min(10, n) * theirs``.
* **mrr@10 in pytrec_eval**: trec_eval's ``recip_rank`` has no cutoff, so it gets the run cut at rank 10.
* **Negative labels** are refused by our one qrels reader (labels 0..65535): trec_eval reads
  a negative label as "not pooled", which ``-J`` drops like an unjudged passage, while a judged non-relevant
  passage stays in the condensed list; ``test_negative_labels_are_refused_not_read_two_ways`` shows both.
* Relevant means label > 0 for every measure on both sides (pytrec_eval's and ir_measures' default
  relevance level 1); gains are the labels (linear, trec_eval's ``ndcg_cut``).

A second group writes hypothesis-drawn files and runs ``analysis metrics`` and ``analysis check-pytrec``
in subprocesses: each ends with exit status 0 or 1 (no signal, no traceback); a refusal is one line. Each
subprocess is forked from one server per module that has imported the analysis command line and
pytrec_eval (``tests/support/pyforks.py``): a process of its own (its exit status, stdout and stderr; a
signal's death as 128 + signum), without the ~0.4 CPU-s of imports each.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ir_measures
import pytest
import pytrec_eval
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from analysis.inputs.trec import read_qrels, read_run, write_run
from analysis.stats.metrics import evaluate

Qrels = dict[str, dict[str, int]]
Run = dict[str, list[tuple[str, float]]]

TOL = 1e-12
# drawn cases per reference comparison (each case: up to 6 qrels and 7 run queries, up to 25 rows a query);
# 500 and 350 until the suite's time was halved: the same properties on half the draws
EXAMPLES = 250
TIE_EXAMPLES = 175
PLAN_MEASURES = (
    "ndcg@10",
    "ndcg'@10",
    "hit@5",
    "hit@10",
    "recall@5",
    "recall@10",
    "recall@20",
    "mrr@10",
    "judged@10",
)
_PYTREC = {
    "ndcg@10": "ndcg_cut_10",
    "hit@5": "success_5",
    "hit@10": "success_10",
    "recall@5": "recall_5",
    "recall@10": "recall_10",
    "recall@20": "recall_20",
}
_IRM = {
    "ndcg@10": (ir_measures.pytrec_eval, ir_measures.nDCG @ 10),
    "ndcg'@10": (ir_measures.pytrec_eval, ir_measures.nDCG(judged_only=True) @ 10),
    "hit@5": (ir_measures.pytrec_eval, ir_measures.Success @ 5),
    "hit@10": (ir_measures.pytrec_eval, ir_measures.Success @ 10),
    "recall@5": (ir_measures.pytrec_eval, ir_measures.R @ 5),
    "recall@10": (ir_measures.pytrec_eval, ir_measures.R @ 10),
    "recall@20": (ir_measures.pytrec_eval, ir_measures.R @ 20),
    "mrr@10": (ir_measures.msmarco, ir_measures.RR @ 10),
    "judged@10": (ir_measures.judged, ir_measures.Judged @ 10),
}
DOCS = tuple(f"d{i:02d}" for i in range(30))  # one pool for all queries: a docid judged for one is unjudged
QUERIES = tuple(f"q{i}" for i in range(8))  # for another


@st.composite
def cases(draw: Any) -> tuple[Qrels, Run]:
    """Qrels and a run in rank order (ties in any order; scores never increase with rank).

    Hypothesis draws the sizes and a seed; the case is built from the seed (``random.Random``), which costs
    a few draws per case instead of hundreds, so that thousands of cases fit the suite's budget. A failing
    case is printed whole by the assertion (and hypothesis shrinks the sizes)."""
    n_qrels = draw(st.integers(1, 6))
    n_run = draw(st.integers(0, 7))
    max_judged = draw(st.integers(1, 12))
    max_rows = draw(st.integers(0, 25))
    n_scores = draw(st.integers(1, 9))  # distinct score values: 1 means every row of a query is tied
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    qrels: Qrels = {}
    for q in rng.sample(QUERIES, n_qrels):
        judged = rng.sample(DOCS, rng.randint(1, max_judged))
        # graded labels; all-0 queries (no relevant passage) come up often with few judgments
        qrels[q] = {d: rng.choice((0, 0, 1, 2, 3)) for d in judged}
    run: Run = {}
    levels = [v / 2 for v in range(-4, 5)][:n_scores]  # half-steps: float equality is exact
    for q in rng.sample(QUERIES, n_run):  # absent queries, extra queries, and [] (no candidates)
        docs = rng.sample(DOCS, rng.randint(0, max_rows))
        scores = sorted((rng.choice(levels) for _ in docs), reverse=True)
        # docs in drawn order beside sorted scores: tied rows are in an arbitrary order
        run[q] = list(zip(docs, scores, strict=True))
    return qrels, run


def _ours(qrels: Qrels, run: Run, measures: Sequence[str] = PLAN_MEASURES) -> dict[str, dict[str, float]]:
    return evaluate(qrels, run, measures=list(measures))


def _rank_faithful(run: Run, depth: int | None = None) -> dict[str, dict[str, float]]:
    """The run as a reference reads it in our order: score = -rank; queries without candidates left out."""
    return {q: {d: float(-r) for r, (d, _) in enumerate(rows[:depth])} for q, rows in run.items() if rows}


def _raw(run: Run) -> dict[str, dict[str, float]]:
    return {q: dict(rows) for q, rows in run.items() if rows}


def _pytrec(
    qrels: Qrels,
    scored: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
    judged_only: bool = False,
) -> dict[str, dict[str, float]]:
    """pytrec_eval measure -> qid -> value for every qrels query; absent from its result: 0 (trec_eval -c)."""
    ev = pytrec_eval.RelevanceEvaluator(qrels, set(measures), judged_docs_only_flag=judged_only)
    got = ev.evaluate({q: dict(v) for q, v in scored.items()})
    return {m: {q: float(got[q][m]) if q in got else 0.0 for q in qrels} for m in measures}


def _pytrec_all(
    qrels: Qrels, run: Run, scored: Mapping[str, Mapping[str, float]], cut: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, float]]:
    """Every plan measure pytrec_eval has, keyed by our names; ``cut``: the same run cut at rank 10."""
    got = _pytrec(qrels, scored, list(_PYTREC.values()))
    out = {ours: got[name] for ours, name in _PYTREC.items()}
    out["ndcg'@10"] = _pytrec(_nonnegative(qrels), scored, ["ndcg_cut_10"], judged_only=True)["ndcg_cut_10"]
    out["mrr@10"] = _pytrec(qrels, cut, ["recip_rank"])["recip_rank"]
    return out


def _nonnegative(qrels: Qrels) -> Qrels:
    """trec_eval reads a negative label as "not pooled", which ``-J`` removes like an unjudged passage; ours
    is a judged non-relevant passage (gain 0, kept in the condensed list). Label 0 says the same to both."""
    return {q: {d: max(r, 0) for d, r in v.items()} for q, v in qrels.items()}


def _irm(
    qrels: Qrels, scored: Mapping[str, Mapping[str, float]], measures: Sequence[str]
) -> dict[str, dict[str, float]]:
    """ir_measures per plan measure (one evaluator per provider); qid -> value for every qrels query."""
    run = {q: dict(v) for q, v in scored.items()}
    out: dict[str, dict[str, float]] = {m: {} for m in measures}
    by_measure = {_IRM[m][1]: m for m in measures}
    for provider in {_IRM[m][0] for m in measures}:
        wanted = [_IRM[m][1] for m in measures if _IRM[m][0] is provider]
        # the condensed nDCG runs on trec_eval (pytrec_eval provider): negative labels as in _nonnegative
        given = _nonnegative(qrels) if provider is ir_measures.pytrec_eval else qrels
        for r in provider.iter_calc(wanted, given, run):
            out[by_measure[r.measure]][r.query_id] = float(r.value)
    for m in measures:  # ir_measures itself gives an absent query its default (0)
        assert set(out[m]) == set(qrels), m
    return out


def _judged_counts(values: Mapping[str, float], run: Run, theirs: bool) -> dict[str, float]:
    """judged@10 as counts: ours divides by 10, ir_measures' Judged@10 by min(10, n)."""
    return {q: v * (min(10, len(run.get(q, []))) if theirs else 10) for q, v in values.items()}


def _assert_close(ours: Mapping[str, float], theirs: Mapping[str, float], what: str) -> None:
    assert set(ours) == set(theirs), what
    bad = {q: (ours[q], theirs[q]) for q in ours if not abs(ours[q] - theirs[q]) <= TOL}
    assert not bad, f"{what}: ours vs reference differ on {bad}"


def _tie_order(run: Run, descending_docid: bool) -> Run:
    """Our run with tied passages listed in a reference's own tie order (score desc, then docid)."""
    out: Run = {}
    for q, rows in run.items():
        by_doc = sorted(rows, key=lambda x: x[0], reverse=descending_docid)
        out[q] = sorted(by_doc, key=lambda x: -x[1])  # stable: docid order kept within a score
    return out


# --- pytrec_eval -------------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_measure_equals_pytrec_eval_rank_faithful(case: tuple[Qrels, Run]) -> None:
    qrels, run = case
    note(f"qrels={qrels!r}\nrun={run!r}")
    ours = _ours(qrels, run)
    theirs = _pytrec_all(qrels, run, _rank_faithful(run), _rank_faithful(run, depth=10))
    assert set(theirs) == set(PLAN_MEASURES) - {"judged@10"}
    for m, values in theirs.items():
        _assert_close(ours[m], values, f"{m} vs pytrec_eval")


@settings(max_examples=TIE_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_trec_eval_tie_order_with_raw_scores(case: tuple[Qrels, Run]) -> None:
    """Ties listed as trec_eval sorts them (docid descending): pytrec_eval on the raw scores agrees."""
    qrels, run = case
    note(f"qrels={qrels!r}\nrun={run!r}")
    run = _tie_order(run, descending_docid=True)
    ours = _ours(qrels, run)
    theirs = _pytrec_all(qrels, run, _raw(run), {q: dict(rows[:10]) for q, rows in run.items() if rows})
    for m, values in theirs.items():
        _assert_close(ours[m], values, f"{m} vs pytrec_eval (own order)")


def test_negative_labels_are_refused_not_read_two_ways() -> None:
    """Why the reader refuses a label of -1: trec_eval -J drops it as "not pooled" and condenses [-1, 1] to
    [1] (1.0), where a judged non-relevant passage (label 0) stays in the list (0.631 on both sides)."""
    qrels, run = {"q": {"a": -1, "b": 1}}, {"q": [("a", 2.0), ("b", 1.0)]}
    with pytest.raises(ValueError, match=r"0\.\.65535"):
        _ours(qrels, run, ["ndcg'@10"])
    want = 1 / math.log2(3)
    assert _pytrec(qrels, _raw(run), ["ndcg_cut_10"], judged_only=True)["ndcg_cut_10"]["q"] == 1.0
    zero = {"q": {"a": 0, "b": 1}}
    assert abs(_ours(zero, run, ["ndcg'@10"])["ndcg'@10"]["q"] - want) <= TOL
    assert abs(_pytrec(zero, _raw(run), ["ndcg_cut_10"], judged_only=True)["ndcg_cut_10"]["q"] - want) <= TOL


# --- ir_measures -------------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_measure_equals_ir_measures_rank_faithful(case: tuple[Qrels, Run]) -> None:
    qrels, run = case
    note(f"qrels={qrels!r}\nrun={run!r}")
    ours = _ours(qrels, run)
    theirs = _irm(qrels, _rank_faithful(run), PLAN_MEASURES)
    for m in PLAN_MEASURES:
        if m == "judged@10":
            _assert_close(_judged_counts(ours[m], run, False), _judged_counts(theirs[m], run, True), m)
        else:
            _assert_close(ours[m], theirs[m], f"{m} vs ir_measures")


@settings(max_examples=TIE_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_ir_measures_python_providers_tie_order_with_raw_scores(case: tuple[Qrels, Run]) -> None:
    """msmarco's RR@10 and judged's Judged@10 sort ties by docid ascending: listed so, raw scores agree."""
    qrels, run = case
    note(f"qrels={qrels!r}\nrun={run!r}")
    run = _tie_order(run, descending_docid=False)
    ours = _ours(qrels, run, ("mrr@10", "judged@10"))
    theirs = _irm(qrels, _raw(run), ("mrr@10", "judged@10"))
    _assert_close(ours["mrr@10"], theirs["mrr@10"], "mrr@10 vs ir_measures (own order)")
    _assert_close(
        _judged_counts(ours["judged@10"], run, False),
        _judged_counts(theirs["judged@10"], run, True),
        "judged@10 (own order)",
    )


def test_the_references_see_the_ties_that_we_order() -> None:
    """The cases are not vacuous: on one fixed case with a tie at the top, our order and trec_eval's differ
    and so do the values; after listing the tie as trec_eval does, they agree."""
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": [("a", 1.0), ("b", 1.0)]}  # our rule: rank order, "a" first; trec_eval: docid desc, "b" first
    assert _ours(qrels, run, ["mrr@10"])["mrr@10"]["q"] == 1.0
    assert _pytrec(qrels, _raw(run), ["recip_rank"])["recip_rank"]["q"] == 0.5
    trec_order = _tie_order(run, descending_docid=True)
    assert _pytrec(qrels, _raw(trec_order), ["recip_rank"])["recip_rank"]["q"] == 0.5
    assert _irm(qrels, _raw(run), ["mrr@10"])["mrr@10"]["q"] == 1.0  # msmarco: docid ascending, "a" first
    assert _irm(qrels, _raw(_tie_order(run, descending_docid=False)), ["mrr@10"])["mrr@10"]["q"] == 1.0
    assert _ours(qrels, _tie_order(run, descending_docid=True), ["mrr@10"])["mrr@10"]["q"] == 0.5


# --- through the files: reader, writer and metrics together ------------------------------------------------


def _write_qrels(path: Path, qrels: Qrels) -> None:
    path.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q in sorted(qrels) for d, r in qrels[q].items()), encoding="utf-8"
    )


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(cases())
def test_files_read_back_give_the_reference_values(tmp_path: Path, case: tuple[Qrels, Run]) -> None:
    """write_run then read_run/read_qrels: the same values as pytrec_eval on the written run (rank-faithful),
    and queries the qrels lack are ignored only when allowed."""
    qrels, run = case
    note(f"qrels={qrels!r}\nrun={run!r}")
    written = {q: rows for q, rows in run.items() if rows}  # a query without candidates has no line
    assume(written)  # an empty run file is refused by design (tests/analysis/test_analysis_trec.py)
    _write_qrels(tmp_path / "qrels.txt", qrels)
    write_run(tmp_path / "run.trec", written, tag="prop")
    got_qrels = read_qrels(tmp_path / "qrels.txt")
    got_run = read_run(tmp_path / "run.trec", allow_unknown_queries=True)
    assert got_qrels == qrels
    assert got_run == written
    ours = _ours(got_qrels, got_run)
    theirs = _pytrec_all(qrels, written, _rank_faithful(written), _rank_faithful(written, depth=10))
    for m, values in theirs.items():
        _assert_close(ours[m], values, f"{m} through the files")


# --- the CLIs on hypothesis-drawn probes --------------------------------------------------------------

_ROOT = Path(__file__).resolve().parents[2]


@st.composite
def probes(draw: Any) -> tuple[str, str]:
    """A qrels text and a run text: mostly valid, sometimes broken in one of the ways files break."""
    qrels, run = draw(cases())
    qrels_lines = [f"{q} 0 {d} {r}" for q in sorted(qrels) for d, r in qrels[q].items()]
    run_lines = [f"{q} Q0 {d} {i} {s!r} prop" for q, rows in run.items() for i, (d, s) in enumerate(rows, 1)]
    damage = draw(
        st.sampled_from(
            ["none", "none", "label", "rank", "score", "columns", "duplicate", "empty", "crlf", "bom"]
        )
    )
    if damage == "label" and qrels_lines:
        i = draw(st.integers(0, len(qrels_lines) - 1))
        # 2**62 (a segfault in pytrec_eval) and -2**62 (our unjudged marker) are the worst
        # cases, owned by the label-range change: see test_label_of_2_62_crashes_check_pytrec below
        big = draw(st.sampled_from(["99999999999999999999", "-99999999999999999999", "1.5", "x", "1e3"]))
        parts = qrels_lines[i].split()
        qrels_lines[i] = " ".join([*parts[:3], big])
    elif damage == "rank" and run_lines:
        i = draw(st.integers(0, len(run_lines) - 1))
        parts = run_lines[i].split()
        parts[3] = draw(st.sampled_from(["0", "-1", "99999999999999999999999", "1.0"]))
        run_lines[i] = " ".join(parts)
    elif damage == "score" and run_lines:
        i = draw(st.integers(0, len(run_lines) - 1))
        parts = run_lines[i].split()
        parts[4] = draw(st.sampled_from(["nan", "inf", "1e999", "0x1p3", "-"]))
        run_lines[i] = " ".join(parts)
    elif damage == "columns" and run_lines:
        i = draw(st.integers(0, len(run_lines) - 1))
        run_lines[i] = run_lines[i].rsplit(" ", 1)[0]
    elif damage == "duplicate" and run_lines:
        run_lines.append(run_lines[0])
    elif damage == "empty":
        run_lines = []
    sep = "\r\n" if damage == "crlf" else "\n"
    run_text = sep.join(run_lines) + (sep if run_lines else "")
    if damage == "bom":
        run_text = "\ufeff" + run_text
    return sep.join(qrels_lines) + sep, run_text


Ran = tuple[list[str], subprocess.CompletedProcess[str]]
_PYTHON: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def forked_python(analysis_python: str) -> None:
    """The stand-in ``python`` of this environment that :func:`_analysis` starts the command line with
    (tests/conftest.py's ``analysis_python``: one server per test process, shared with the worst-inputs tests,
    that has imported numpy, click, analysis.cli, pyarrow and pytrec_eval)."""
    _PYTHON["python"] = analysis_python


def _analysis(*args: str) -> list[str]:
    """``analysis ARGS`` (the console script, as ``python -m analysis.cli``), run by the forked stand-in."""
    return [_PYTHON["python"], str(Path(sys.executable).parent / "analysis"), *args]


def _cli(
    tmp: Path, qrels_text: str, run_text: str, commands: tuple[str, ...] = ("metrics", "check-pytrec")
) -> list[Ran]:
    (tmp / "qrels.txt").write_bytes(qrels_text.encode("utf-8"))
    (tmp / "run.trec").write_bytes(run_text.encode("utf-8"))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = []
    options = {"metrics": ["metrics", "--allow-unknown-queries"], "check-pytrec": ["check-pytrec"]}
    for cmd in (options[c] for c in commands):
        args = _analysis(*cmd, "--run", str(tmp / "run.trec"), "--qrels", str(tmp / "qrels.txt"))
        out.append(
            (
                args,
                subprocess.run(
                    args, capture_output=True, text=True, env=env, cwd=_ROOT, timeout=120, check=False
                ),
            )
        )
    return out


@settings(
    max_examples=3,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(probes())
def test_clis_end_cleanly_on_drawn_probes(tmp_path: Path, probe: tuple[str, str]) -> None:
    """No signal, no traceback: exit 0 (a result) or 1 (a refusal) and, when refused, a one-line reason."""
    for args, proc in _cli(tmp_path, *probe):
        what = f"{args[2]} on\n{probe[1][:400]!r}\nstderr: {proc.stderr[-800:]}"
        assert proc.returncode in (0, 1), f"exit {proc.returncode} (128 + N: signal N): {what}"
        assert "Traceback" not in proc.stderr + proc.stdout, what
        if proc.returncode == 1:
            lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1, f"refusal in {len(lines)} lines: {what}"


def test_a_label_of_2_62_is_refused_before_pytrec_eval(tmp_path: Path) -> None:
    """It segfaulted pytrec_eval inside check-pytrec; the qrels reader refuses it now."""
    for args, proc in _cli(
        tmp_path, "q1 0 d1 4611686018427387904\nq1 0 d2 0\n", "q1 Q0 d1 1 1.0 t\n", ("check-pytrec",)
    ):
        assert proc.returncode == 1, f"{args[2]}: exit {proc.returncode}"
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "0..65535" in lines[0] and "Traceback" not in proc.stderr, lines


def test_cli_metrics_equal_pytrec_eval_on_a_valid_probe(tmp_path: Path) -> None:
    """The CLI's printed nDCG@10 is the reference's too (one fixed valid case; the JSON output)."""
    qrels = {"q1": {"d01": 2, "d02": 0, "d03": 1}, "q2": {"d04": 1}}
    run = {"q1": [("d03", 2.0), ("d05", 1.5), ("d01", 1.0)], "q3": [("d04", 1.0)]}
    _write_qrels(tmp_path / "qrels.txt", qrels)
    write_run(tmp_path / "run.trec", run, tag="prop")
    args = _analysis(
        "metrics",
        "--run",
        str(tmp_path / "run.trec"),
        "--qrels",
        str(tmp_path / "qrels.txt"),
        "--allow-unknown-queries",
        "--json",
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # as _cli's: the same server
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=_ROOT, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    want = _pytrec(qrels, _rank_faithful(run), ["ndcg_cut_10"])["ndcg_cut_10"]
    mean = sum(want.values()) / len(want)  # q2 absent from the run: 0
    assert math.isclose(_find(got, "ndcg@10"), mean, rel_tol=0, abs_tol=TOL), got


def _find(obj: Any, key: str) -> float:
    if isinstance(obj, dict):
        if key in obj and isinstance(obj[key], (int, float)):
            return float(obj[key])
        for v in obj.values():
            try:
                return _find(v, key)
            except KeyError:
                continue
    raise KeyError(key)


@pytest.fixture(autouse=True)
def _no_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
