"""The rehearsal's report marks an incomplete stand-in run: a query removed from a ``minilm-standin`` run is
named in the report, which refuses to rate the run. The report is built the way
``bench rehearse`` builds it (``analysis.reporting.report.write_report`` with the rehearsal's own stage
flags); a full rehearsal with a failing stand-in takes minutes (its int8 step), so this test starts from its
run files."""

from __future__ import annotations

from pathlib import Path

from analysis.inputs.trec import write_run
from analysis.reporting.report import write_report

QIDS = [f"{i}#0" for i in range(5)]
DOCS = [f"{d}#0" for d in range(30)]


def test_report_marks_a_stand_in_run_with_a_missing_query(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("".join(f"{q}\t0\t{DOCS[i]}\t1\n" for i, q in enumerate(QIDS)), encoding="utf-8")
    first = {q: [(d, float(100 - r)) for r, d in enumerate(DOCS)] for q in QIDS}
    (runs / "first-stage").mkdir(parents=True)
    write_run(runs / "first-stage" / "vector-71k.trec", first, tag="first-stage/vector-71k")
    (runs / "vector-71k").mkdir()
    for k in (20, 50, 100):
        # the first k reordered (reversed), the tail in first-stage order: the reordering invariant
        run = {
            q: [(d, float(-r)) for r, (d, _) in enumerate([*reversed(rows[:k]), *rows[k:]])]
            for q, rows in first.items()
        }
        if k == 100:
            del run[QIDS[2]]  # the stand-in's call failed for this query: it is missing from the run
        write_run(runs / "vector-71k" / f"minilm-standin@{k}.trec", run, tag=f"vector-71k/minilm-standin@{k}")
    report = write_report(runs, qrels, tmp_path / "out", title="REHEARSAL", stage_flags={}, figures=False)
    text = report.read_text(encoding="utf-8")
    assert "not rated: 1 of 5 queries missing" in text
    assert "minilm-standin‡@100 (incomplete: 4 queries)" in text
    assert "minilm-standin‡@20 (incomplete" not in text  # the complete runs are not marked
