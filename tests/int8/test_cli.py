"""`bench int8` refusals: no calibration set, a calibration set overlapping dev, an fp32 snapshot at the
wrong revision, a missing quantised folder; each names the file or the pin and exits non-zero."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bench.cli import cli
from bench.data import Passage
from bench.int8.calibration import draw_pairs, write_set


def _cal(tmp_path: Path, qid: str = "t1") -> Path:
    cal = draw_pairs(
        {qid: "Frage?"},
        [Passage("1#0", "T", "x")],
        n=1,
        seed=1,
        source="t",
        dev_queries=[],
        excluded_passages=[],
        excluded_name="none",
    )
    path = tmp_path / "cal.json"
    write_set(path, cal)
    return path


def test_quantize_refusals(tmp_path: Path) -> None:
    run = CliRunner().invoke
    missing = run(cli, ["int8", "quantize", "--calibration", str(tmp_path / "none.json")])
    assert missing.exit_code == 1 and "none.json: no calibration set" in missing.output
    dev = run(cli, ["int8", "quantize", "--calibration", str(_cal(tmp_path, "81674#0"))])  # a dev query id
    assert dev.exit_code == 1 and "calibration queries are dev queries (e.g. 81674#0)" in dev.output
    wrong = tmp_path / "models--BAAI--bge-reranker-v2-m3" / "snapshots" / "0000"
    wrong.mkdir(parents=True)
    rev = run(cli, ["int8", "quantize", "--calibration", str(_cal(tmp_path)), "--snapshot-dir", str(wrong)])
    assert rev.exit_code == 1 and "not a snapshot at the pinned revision 953dc6f6" in rev.output


def test_agreement_needs_an_action(tmp_path: Path) -> None:
    run = CliRunner().invoke
    none = run(cli, ["int8", "agreement"])
    assert none.exit_code == 1 and "--against FILE" in none.output
    assert "calibration-set" in run(cli, ["int8", "--help"]).output


def test_quality_run_refused_while_the_fp32_model_is_not_rated(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["int8", "quality", "--checks", str(tmp_path / "checks"), "--study", str(tmp_path / "s")]
    )
    assert result.exit_code == 1
    assert "bge-v2-m3 is not rated" in result.output and "int8 variant" in result.output
    assert not (tmp_path / "s").exists()  # nothing written
