"""Plan check 2 as ``bench quality`` runs it: pytrec_eval against our nDCG@10 on the written runs; a
difference over 1e-4 or a missing pytrec_eval fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.inputs.trec import write_run
from bench.quality.check2 import check_runs, failures
from bench.quality.runs import RunFileInfo


@pytest.fixture
def written(tmp_path: Path) -> tuple[list[RunFileInfo], Path]:
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\t0\td3\t1\nq1\t0\td1\t1\nq2\t0\td2\t1\nq3\t0\td9\t1\n", encoding="utf-8")
    path = tmp_path / "runs" / "hybrid-71k" / "m@100.trec"
    path.parent.mkdir(parents=True)
    run = {"q1": [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)], "q2": [("d1", 0.5), ("d2", 0.25)]}  # q3 missing
    write_run(path, run, tag="hybrid-71k/m@100")
    infos = [RunFileInfo("hybrid-71k", "m", 100, path, 2, 0), RunFileInfo("hybrid-71k", "m", 20, None, 0, 2)]
    return infos, qrels


def test_check2_passes_on_a_correct_evaluation(written: tuple[list[RunFileInfo], Path]) -> None:
    runs, qrels = written
    result = check_runs(runs, qrels)
    assert result["passed"] is True and failures(result) is None
    (row,) = result["runs"]
    assert row["queries"] == 3 and row["max_abs_diff"] <= 1e-12


Written = tuple[list[RunFileInfo], Path]


def test_check2_fails_on_a_wrong_ndcg(written: Written, monkeypatch: pytest.MonkeyPatch) -> None:
    import analysis.reporting.pytrec_check as pc

    real = pc.pytrec_ndcg10

    def off_by_2e4(qrels, run, **kw):  # type: ignore[no-untyped-def]
        return {q: v + 2e-4 for q, v in real(qrels, run, **kw).items()}

    monkeypatch.setattr(pc, "pytrec_ndcg10", off_by_2e4)
    runs, qrels = written
    result = check_runs(runs, qrels)
    assert result["passed"] is False
    message = failures(result) or ""
    assert "plan check 2 failed" in message and "hybrid-71k/m@100" in message


def test_check2_without_pytrec_eval_is_not_a_pass(
    written: tuple[list[RunFileInfo], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import analysis.reporting.pytrec_check as pc

    def missing() -> None:
        raise RuntimeError("plan check 2 needs pytrec_eval, which is not installed")

    monkeypatch.setattr(pc, "_import_pytrec_eval", missing)
    runs, qrels = written
    result = check_runs(runs, qrels)
    assert result["passed"] is False and "did not run" in (failures(result) or "")


def test_check2_never_says_passed_for_a_run_not_compared_in_pytrec_evals_order(tmp_path: Path) -> None:
    """Every query of the run has tied scores, so pytrec_eval's own order compared nothing. The
    manifest records NOT COMPARED (``passed`` false) and the command says so; no difference was found, so
    the session does not fail."""
    from bench.quality.check2 import summary

    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\t0\td1\t1\nq2\t0\td2\t1\n", encoding="utf-8")
    path = tmp_path / "hybrid-71k" / "m@100.trec"
    path.parent.mkdir(parents=True)
    tied = {"q1": [("d1", 1.0), ("d2", 1.0)], "q2": [("d1", 0.5), ("d2", 0.5)]}
    write_run(path, tied, tag="hybrid-71k/m@100")
    result = check_runs([RunFileInfo("hybrid-71k", "m", 100, path, 2, 0)], qrels)
    assert result["passed"] is False and result["verdict"] == "NOT COMPARED" and failures(result) is None
    (row,) = result["runs"]
    assert (row["passed"], row["own_order_checked"], row["max_abs_diff"]) == (False, False, 0.0)
    assert summary(result).startswith("NOT COMPARED") and "hybrid-71k/m@100" in summary(result)
