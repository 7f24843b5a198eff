"""Agreement across machines: Spearman per query, >= 0.99 passes, failures named; the scores file's checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from bench.errors import BenchError
from bench.int8.agreement import compare, read_scores, scores_record, summary, write_scores

DOCS = [f"{i}#0" for i in range(10)]
BASE = [float(i) for i in range(10)]


def test_compare_matches_scipy_and_names_failures() -> None:
    swapped = BASE.copy()
    swapped[0], swapped[9] = swapped[9], swapped[0]  # rho = 1 - 6*2*81/(10*99) = 0.018...
    near = BASE.copy()
    near[4], near[5] = near[5], near[4]  # rho = 1 - 6*2/990 = 0.98788 < 0.99
    theirs = {q: (DOCS, BASE) for q in "abcde"}
    reordered = (list(reversed(DOCS)), list(reversed(BASE)))  # same scores, other candidate order
    mine = {"a": reordered, "b": (DOCS, swapped), "c": (DOCS, near), "e": ([*DOCS[:9], "x#0"], BASE)}
    rows = {r.qid: r for r in compare(mine, theirs)}
    assert rows["a"].passed and rows["a"].spearman == pytest.approx(1.0)
    assert rows["b"].spearman == pytest.approx(spearmanr(BASE, swapped).statistic, abs=1e-12)
    assert rows["c"].spearman == pytest.approx(spearmanr(BASE, near).statistic, abs=1e-12)
    assert not rows["c"].passed and rows["c"].spearman > 0.98  # just below the plan's 0.99 fails
    assert (
        rows["d"].reason == "query missing on this machine" and rows["e"].reason == "candidate lists differ"
    )
    s = summary(list(rows.values()))
    assert s["failed"] == ["b", "c", "d", "e"] and s["passed"] == 1


def test_scores_file_round_trip_and_bad_files(tmp_path: Path) -> None:
    rec = scores_record(
        {"a": (DOCS, BASE)}, model="m", machine={"vnni": False}, manifest_sha256=None, inputs={}
    )
    path = tmp_path / "s.json"
    write_scores(path, rec)
    assert read_scores(path) == {"a": (DOCS, BASE)}
    with pytest.raises(BenchError, match="scores file missing"):
        read_scores(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**rec, "queries": {"a": {"docids": DOCS, "scores": BASE[:3]}}}))
    with pytest.raises(BenchError, match="query a: 'docids' and 'scores' must be lists of equal length"):
        read_scores(bad)
    bad.write_text("{not json")
    with pytest.raises(BenchError, match="not valid JSON"):
        read_scores(bad)


def test_cli_refuses_a_bad_against_file_before_scoring(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from bench.cli import cli

    bad = tmp_path / "theirs.json"
    bad.write_text(json.dumps({"format": "other"}))
    result = CliRunner().invoke(cli, ["int8", "agreement", "--against", str(bad)])
    assert result.exit_code == 1
    assert "not an int8 scores file" in result.output
