"""The analysis code on record. `analysis report` writes a record of the code into every
file; audit row 10 checks it against the code of the commit that committed the runs, wants every later
change to analysis/ named in DEVIATIONS.md, and the stamped analysis record committed before the first run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import analysis.cli as analysis_cli
from analysis.inputs.trec import read_qrels
from analysis.reporting import codeinfo
from analysis.reporting.report import write_report
from analysis.simulation.synthetic import write_study
from bench.audit.analysiscode import STAMP_FILE, analysis_code_row
from bench.audit.history import history_problem
from tests.conftest import REPO_ROOT, git

QRELS = REPO_ROOT / "data/bundled/miracl-de-dev/qrels.miracl-v1.0-de-dev.tsv"
ENTRY = (
    "\n## D-{n:03d}: analysis fix\n- date: 2026-12-01\n- plan section: Data\n- what changes: {what}\n"
    "- why: b\n- expected effect on results: none\n"
)


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def small_qrels(tmp: Path) -> Path:
    lines = QRELS.read_text().splitlines(keepends=True)
    qids = sorted({line.split()[0] for line in lines})[:8]
    path = tmp / "qrels.tsv"
    path.write_text("".join(line for line in lines if line.split()[0] in qids))
    return path


@pytest.fixture(scope="module")
def built_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PLAN.md; the project's analysis/ and uv.lock; the analysis record stamped (runbook step 1); runs and
    what `analysis report` writes from them (this checkout's analysis code, the same bytes)."""
    tmp_path = tmp_path_factory.mktemp("code-study")
    root = tmp_path / "study"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "PLAN.md").write_text("# A plan\n\n## Data\nbody\n")
    commit(root, "A plan")
    shutil.copytree(REPO_ROOT / "analysis", root / "analysis", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO_ROOT / "uv.lock", root / "uv.lock")
    (root / "DEVIATIONS.md").write_text("# Deviations from PLAN.md\n\nheader\n")
    commit(root, "the project")
    (root / "timestamps").mkdir()
    (root / STAMP_FILE).write_text(json.dumps({codeinfo.KEY: codeinfo.code_record(root)}))
    commit(root, "analysis code stamped")
    qrels = small_qrels(tmp_path)
    write_study(
        root / "runs", read_qrels(qrels), stages=("hybrid-71k",), models={"bge-v2-m3": 1.5}, depths=(20,)
    )
    write_report(root / "runs", qrels, root / "results", figures=False)
    commit(root, "the study")
    return root


@pytest.fixture
def study(built_study: Path, tmp_path: Path) -> Path:
    """A copy of the module's study (repository and working tree) for one test to change."""
    root = tmp_path / "study"
    shutil.copytree(built_study, root, symlinks=True)
    return root


def test_every_report_file_records_the_analysis_code(study: Path) -> None:
    files = sorted(p for p in (study / "results").rglob("*") if p.is_file())
    assert len(files) >= 3
    records = [codeinfo.read_record(p.name, p.read_bytes()) for p in files]
    assert all(codeinfo.well_formed(r) for r in records)
    assert all(r == records[0] for r in records)
    ours = codeinfo.code_record()
    assert records[0] is not None and records[0]["analysis_digest"] == ours["analysis_digest"]
    assert records[0]["packages_digest"] == ours["packages_digest"]


def test_a_committed_study_with_its_code_on_record_passes(study: Path) -> None:
    row = analysis_code_row(study, history_problem(study))
    assert (row.number, row.verdict) == (10, "OK"), row
    assert "stamped in" in row.reason and "before the first run" in row.reason


def test_changing_analysis_after_the_study_fails_unless_a_deviation_names_it(study: Path) -> None:
    with (study / "analysis/stats/metrics.py").open("a") as fh:
        fh.write("# changed after the study\n")
    commit(study, "a change to the analysis")
    row = analysis_code_row(study, history_problem(study))
    assert row.verdict == "FAIL" and "analysis/stats/metrics.py" in row.reason, row
    assert "no DEVIATIONS.md entry names" in row.reason
    with (study / "DEVIATIONS.md").open("a") as fh:
        fh.write(ENTRY.format(n=1, what="analysis/stats/metrics.py gains a comment"))
    commit(study, "D-001")
    assert analysis_code_row(study, history_problem(study)).verdict == "OK"


def test_results_written_by_other_code_fail(study: Path) -> None:
    path = study / "results/quality/study.json"
    doc = json.loads(path.read_text())
    doc[codeinfo.KEY]["analysis_digest"] = "0" * 64
    path.write_text(json.dumps(doc))
    commit(study, "results of other code")
    row = analysis_code_row(study, history_problem(study))
    assert row.verdict == "FAIL"
    assert any("is not that of analysis/ in the runs' commit" in d for d in row.details)
    assert any(
        d.startswith("results/quality/hybrid-71k.json: its analysis_code record differs") for d in row.details
    )


def test_a_stamp_after_the_first_run_fails(tmp_path: Path, study: Path) -> None:
    git(study, "rm", "-q", STAMP_FILE)
    commit(study, "unstamp")
    row = analysis_code_row(study, history_problem(study))
    assert row.verdict == "NOT YET" and "not stamped" in row.reason
    (study / "timestamps").mkdir(exist_ok=True)
    (study / STAMP_FILE).write_text(json.dumps({codeinfo.KEY: codeinfo.code_record(study)}))
    late = commit(study, "stamped late")
    row = analysis_code_row(study, history_problem(study))
    assert row.verdict == "FAIL" and f"was committed in {late[:7]}, not before the first run" in row.reason


def test_code_digest_refuses_uncommitted_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = {"analysis_digest": "a" * 64, "commit": "b" * 40, "dirty": True, "packages_digest": "c" * 64}
    monkeypatch.setattr(analysis_cli, "code_record", lambda: record)
    out = tmp_path / "analysis-code.json"
    result = CliRunner().invoke(analysis_cli.cli, ["code-digest", "--out", str(out)])
    assert result.exit_code == 1 and "uncommitted changes" in result.output and not out.exists()
    monkeypatch.setattr(analysis_cli, "code_record", lambda: {**record, "dirty": False})
    result = CliRunner().invoke(analysis_cli.cli, ["code-digest", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text()) == {codeinfo.KEY: {**record, "dirty": False}}


def test_the_packages_digest_reads_what_the_standard_library_would() -> None:
    """The digest's two shortcuts against the plain computation they replace: the import statements of the
    analysis code found by walking statements only (against ast.walk over every node), and the providers of
    each module (against importlib.metadata.packages_distributions), for the analysis code's modules and for
    every top-level name installed here, and for names that nothing provides."""
    import ast
    import importlib.metadata
    import sys

    files = codeinfo.working_files()
    walked: set[str] = set()
    for path, data in files.items():
        for node in ast.walk(ast.parse(data, filename=path)):
            if isinstance(node, ast.Import):
                walked |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                walked.add(node.module.split(".")[0])
    walked = {n for n in walked if n not in sys.stdlib_module_names and n not in ("analysis", "__future__")}
    assert codeinfo.imported_modules(files) == walked
    assert {"numpy", "click", "pyarrow"} <= walked
    nested = b"def f():\n    try:\n        import a.b\n    except E:\n        from c import d\n" + (
        b"class K:\n    match x:\n        case 1:\n            if y:\n                import e\n"
    )
    assert codeinfo.imported_modules({"analysis/x.py": nested}) == {"a", "c", "e"}

    full = importlib.metadata.packages_distributions()
    for modules in (walked, set(full), {"no_such_module_here", "py", "_"}):
        assert codeinfo.providers(modules) == {m: set(full[m]) for m in modules if m in full}
