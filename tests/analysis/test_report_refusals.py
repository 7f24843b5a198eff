"""Refusals of `analysis report` (and `analysis metrics`): a reranked run that does not
reorder its first stage's candidates is refused; no file of a runs folder is left out unsaid; coverage is
said; `--out` loses no file the report did not write and is never one of its inputs. Each refusal exits 1
with one line naming the file and the fix, and writes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from analysis.cli import cli
from analysis.core.plan import PITFALL_REFERENCE, PITFALL_RUN_IDS
from analysis.simulation.synthetic import write_study

Qrels = dict[str, dict[str, int]]
MODELS = {"bge-v2-m3": 1.5, "qwen3-4b": 2.5, "bge-v2-m3-int8": 1.45}


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory, miracl_qrels: Qrels) -> Path:
    runs = tmp_path_factory.mktemp("refusals") / "runs"
    write_study(runs, miracl_qrels, stages=["hybrid-71k"], models=MODELS, depths=(20, 100), seed=3)
    return runs


@pytest.fixture(scope="module")
def reported(study: Path, miracl_qrels_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The study's report, written once for the module's tests that start from it (they copy it)."""
    out = tmp_path_factory.mktemp("reported") / "out"
    result = report(study, miracl_qrels_path, out)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def runs(study: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "runs"
    shutil.copytree(study, copy)
    return copy


def report(runs: Path, qrels: Path, out: Path) -> Result:
    return CliRunner().invoke(
        cli, ["report", "--runs", str(runs), "--qrels", str(qrels), "--out", str(out), "--no-figures"]
    )


def refused(result: Result, *parts: str) -> str:
    """The one-line refusal: exit 1, every part named, no traceback."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    line = result.output.strip()
    assert line.startswith("Error: ") and "\n" not in line and "Fix: " in line, line
    for part in parts:
        assert part in line, (part, line)
    return line


def _edit(path: Path, change: dict[int, str]) -> list[list[str]]:
    """Replace the docid of the given (0-based) lines; returns the rows before the change."""
    rows = [x.split() for x in path.read_text().splitlines()]
    new = [list(r) for r in rows]
    for i, docid in change.items():
        new[i][2] = docid
    path.write_text("".join(" ".join(r) + "\n" for r in new))
    return rows


def test_the_study_itself_is_reported(study: Path, miracl_qrels_path: Path, tmp_path: Path) -> None:
    result = report(study, miracl_qrels_path, tmp_path / "out")
    assert result.exit_code == 0, result.output


def test_a_foreign_id_in_a_reranked_run_is_refused(
    runs: Path, miracl_qrels_path: Path, tmp_path: Path
) -> None:
    path = runs / "hybrid-71k" / "qwen3-4b@100.trec"
    rows = _edit(path, {3: "99999999#0"})
    refused(
        report(runs, miracl_qrels_path, tmp_path / "out"),
        f"{path}:4 (reranked run file)",
        f"in query {rows[3][0]!r} rank 4 holds '99999999#0'",
        "a foreign id",
        "candidates of first-stage/hybrid-71k.trec",
    )
    assert not (tmp_path / "out").exists()  # nothing written


def test_a_candidate_from_beyond_k_in_the_top_k_is_refused(
    runs: Path, miracl_qrels_path: Path, tmp_path: Path
) -> None:
    path = runs / "hybrid-71k" / "bge-v2-m3@20.trec"
    rows = [x.split() for x in path.read_text().splitlines()]
    assert rows[4][0] == rows[40][0]  # rank 5 and rank 41 of the first query: swap their ids
    _edit(path, {4: rows[40][2], 40: rows[4][2]})
    refused(
        report(runs, miracl_qrels_path, tmp_path / "out"),
        f"{path}:5",
        f"rank 5 holds {rows[40][2]!r}",
        "beyond k = 20",
    )


def test_the_int8_run_and_the_pitfall_runs_are_checked(
    runs: Path, miracl_qrels_path: Path, tmp_path: Path
) -> None:
    int8 = runs / "hybrid-71k" / "bge-v2-m3-int8@100.trec"
    rows = _edit(int8, {0: "88888888#0"})
    refused(
        report(runs, miracl_qrels_path, tmp_path / "out"),
        f"{int8}:1",
        f"query {rows[0][0]!r}",
        "'88888888#0'",
    )
    _edit(int8, {0: rows[0][2]})  # repaired
    out = tmp_path / "out"
    assert report(runs, miracl_qrels_path, out).exit_code == 0
    variants = out / "pitfalls" / "runs" / "hybrid-71k"
    variants.mkdir(parents=True)
    for rid in PITFALL_RUN_IDS:
        shutil.copyfile(runs / "hybrid-71k" / "bge-v2-m3@100.trec", variants / f"{rid}@100.trec")
    assert report(runs, miracl_qrels_path, out).exit_code == 0
    assert json.loads((out / "pitfalls.json").read_text())["families"]
    bad = variants / f"{PITFALL_RUN_IDS[1]}@100.trec"
    assert PITFALL_RUN_IDS[1] != PITFALL_REFERENCE
    _edit(bad, {7: "77777777#0"})
    before = (out / "report.md").read_bytes()
    refused(report(runs, miracl_qrels_path, out), f"{bad}:8", "'77777777#0'")
    assert (out / "report.md").read_bytes() == before  # the earlier report is left as it was


# ---- nothing dropped silently ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("hybrid-71k/qwen3-4b@50.trec.gz", "gunzip"),
        ("hybrid-71k/qwen3-4b@50.TREC", "rename it to qwen3-4b@50.trec"),
        ("hybrid-71k/notes.txt", "found another file"),
        ("hybrid-71k/.qwen3-4b@50.trec", "found a hidden one"),
        ("hybrid-71k/old", "found a folder"),
        ("first-stage/keyword-71k.trec.gz", "gunzip"),
        ("first-stage/keyword-71k.TREC", "rename it to keyword-71k.trec"),
        ("qwen3-4b@50.trec", "run files in first-stage/ or a stage folder"),
    ],
)
def test_every_file_of_a_runs_folder_is_read_or_refused(
    runs: Path, miracl_qrels_path: Path, tmp_path: Path, name: str, said: str
) -> None:
    target = runs / name
    if name.endswith("old"):
        target.mkdir()
    else:
        target.write_bytes(b"x")
    refused(report(runs, miracl_qrels_path, tmp_path / "out"), str(target), said)
    assert not (tmp_path / "out").exists()


def test_readme_and_licence_beside_the_stage_folders_are_fine(
    runs: Path, miracl_qrels_path: Path, tmp_path: Path
) -> None:
    (runs / "README.md").write_text("runs\n")
    (runs / "LICENSE").write_text("CC BY 4.0\n")
    assert report(runs, miracl_qrels_path, tmp_path / "out").exit_code == 0


def test_metrics_says_how_many_qrels_queries_a_run_lacks(
    study: Path, miracl_qrels: Qrels, miracl_qrels_path: Path, tmp_path: Path
) -> None:
    run = tmp_path / "part.trec"
    gone = sorted(miracl_qrels)[:12]
    lines = (study / "hybrid-71k" / "qwen3-4b@100.trec").read_text().splitlines(keepends=True)
    run.write_text("".join(x for x in lines if x.split()[0] not in gone))
    result = CliRunner().invoke(
        cli, ["metrics", "--qrels", str(miracl_qrels_path), "--run", str(run), "--json"]
    )
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)[str(run)]
    assert row["queries"] == 305 and row["queries_present"] == 293 and row["queries_missing"] == gone
    text = CliRunner().invoke(cli, ["metrics", "--qrels", str(miracl_qrels_path), "--run", str(run)]).output
    assert "  queries_present 293\n" in text
    assert (
        f"  missing: 12 of 305 qrels queries are not in this run; each scores 0 in every mean above: "
        f"{', '.join(gone[:10])}, ... (12 in all)\n"
    ) in text
    full = (
        CliRunner()
        .invoke(
            cli,
            [
                "metrics",
                "--qrels",
                str(miracl_qrels_path),
                "--run",
                str(study / "hybrid-71k" / "qwen3-4b@100.trec"),
            ],
        )
        .output
    )
    assert "missing:" not in full and "  queries_present 305\n" in full


def test_report_records_the_missing_queries(
    runs: Path, miracl_qrels: Qrels, miracl_qrels_path: Path, tmp_path: Path
) -> None:
    gone = sorted(miracl_qrels)[:2]
    for path in [runs / "first-stage" / "hybrid-71k.trec", *sorted((runs / "hybrid-71k").glob("*.trec"))]:
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(x for x in lines if x.split()[0] not in gone))
    out = tmp_path / "out"
    assert report(runs, miracl_qrels_path, out).exit_code == 0
    rec = json.loads((out / "quality" / "hybrid-71k.json").read_text())
    for run in [rec["first_stage"], *rec["runs"]]:
        assert run["queries_present"] == 303 and run["queries_missing"] == gone
    md = (out / "report.md").read_text()
    assert f"Queries without candidates: 2 of 305 ({', '.join(gone)}; each scores 0 in every run" in md
    assert "a query missing from a run scores 0" in md


# ---- no lost files -------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["equal", "inside"])
def test_out_equal_to_or_inside_runs_is_refused(runs: Path, miracl_qrels_path: Path, where: str) -> None:
    out = runs if where == "equal" else runs / "report"
    before = sorted(p.relative_to(runs).as_posix() for p in runs.rglob("*"))
    refused(
        report(runs, miracl_qrels_path, out),
        f"--out {'is' if where == 'equal' else 'lies inside'} the --runs folder {runs}",
    )
    assert sorted(p.relative_to(runs).as_posix() for p in runs.rglob("*")) == before


def test_runs_inside_an_entry_the_report_owns_is_refused(
    study: Path, miracl_qrels_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(study, out / "figures" / "runs")
    refused(report(out / "figures" / "runs", miracl_qrels_path, out), "(--runs) lies in", "replaces whole")
    # beside the report's entries (the rehearsal's layout) is fine, and stays as it was
    shutil.move(out / "figures" / "runs", out / "runs")
    shutil.rmtree(out / "figures")
    assert report(out / "runs", miracl_qrels_path, out).exit_code == 0
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["first-stage", "hybrid-71k"]


@pytest.mark.parametrize(
    "planted",
    [
        "figures/my-diagram.svg",
        "quality/notes.md",
        "quality/.hidden.json",
        "quality/sub/x.json",
        "latency-summary/readme.txt",
    ],
)
def test_a_file_the_report_did_not_write_is_never_deleted(
    reported: Path, study: Path, miracl_qrels_path: Path, tmp_path: Path, planted: str
) -> None:
    out = tmp_path / "out"
    shutil.copytree(reported, out)  # the study's report, as `analysis report` wrote it
    mine = out / planted
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("mine\n")
    report_md = (out / "report.md").read_bytes()
    first_of = planted.split("/")
    named = out / first_of[0] / first_of[1]
    refused(report(study, miracl_qrels_path, out), str(named), "not a file the report writes")
    assert mine.read_text() == "mine\n" and (out / "report.md").read_bytes() == report_md


def test_an_owned_name_of_the_other_kind_is_refused(
    study: Path, miracl_qrels_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    (out / "report.md").mkdir(parents=True)
    (out / "report.md" / "mine.txt").write_text("mine\n")
    refused(report(study, miracl_qrels_path, out), f"{out / 'report.md'}: a folder where the report writes")
    shutil.rmtree(out / "report.md")
    (out / "figures").write_text("mine\n")
    refused(report(study, miracl_qrels_path, out), f"{out / 'figures'}: a file where the report writes")
    assert (out / "figures").read_text() == "mine\n"
