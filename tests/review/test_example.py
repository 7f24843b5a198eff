"""`bench audit --example DIR`: the practice study audits OK but for the timestamps, and each of the three
tampers that docs/reviewing.md walks through fails the row the docs name, exit 1, naming the file."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bench.audit.cli import audit
from bench.audit.example import build_example
from bench.core.errors import BenchError
from tests.conftest import REPO_ROOT, git
from tests.review.test_review_env import HEAVY

REVIEWING = REPO_ROOT / "docs" / "reviewing.md"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory, review_python: str) -> Path:
    """`bench audit --example DIR` in a process of its own (forked from tests/review/conftest.py's server,
    whose preloads are light): exit 3 (all OK but the timestamps), and nothing of torch, transformers or
    openvino imported on the way."""
    target = tmp_path_factory.mktemp("example") / "study"
    code = (
        "import sys\nfrom bench.cli import main\n"
        f"sys.argv = ['bench', 'audit', '--example', {str(target)!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    print('EXIT', exc.code)\n"
        f"print('HEAVY', sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    done = subprocess.run([review_python, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.stdout.strip().splitlines()[-2:] == ["EXIT 3", "HEAVY []"], done.stdout[-3000:] + done.stderr
    assert "EXAMPLE study built in" in done.stdout
    return target


def _audit(root: Path) -> Result:
    return CliRunner().invoke(audit, ["--root", str(root)], catch_exceptions=False)


def _verdicts(output: str) -> dict[int, str]:
    """Row number -> verdict, from the audit's table."""
    out = {}
    for line in output.splitlines():
        parts = line.split()
        if parts and parts[0].isdigit() and ("OK" in parts or "FAIL" in parts or "NOT" in parts):
            verdict = next(p for p in parts if p in ("OK", "FAIL", "NOT"))
            out[int(parts[0])] = "NOT YET" if verdict == "NOT" else verdict
    return out


def test_example_audits_ok_but_the_timestamps(example: Path) -> None:
    result = _audit(example)
    rows = _verdicts(result.output)
    assert result.exit_code == 3, result.output
    assert rows.pop(2) == "NOT YET"
    assert len(rows) >= 8 and set(rows.values()) == {"OK"}, result.output
    # the study's commands wrote it: runs of both kinds, results from analysis report, the manifest
    files = git(example, "ls-files").splitlines()
    assert "runs/first-stage/keyword-71k.trec" in files
    assert {"runs/keyword-71k/bm25-standin@20.trec", "results/report.md", "results/manifest.json"} <= set(
        files
    )
    # nothing can take it for the study: README, commit messages, the manifest's parameters
    assert (example / "README.md").read_text(encoding="utf-8").startswith("# EXAMPLE:")
    subjects = git(example, "log", "--format=%s").splitlines()
    assert len(subjects) == 3 and all(s.startswith("EXAMPLE: ") for s in subjects)
    first = git(example, "rev-list", "--max-parents=0", "HEAD").strip()
    assert git(example, "show", "--name-only", "--format=", first).split() == ["PLAN.md"]
    manifest = json.loads((example / "results" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["study"]["params"]["example"] is True


@pytest.mark.parametrize("inside", ["", "runs/example", "results", "docs/x"])
def test_example_refused_inside_the_repository(inside: str) -> None:
    with pytest.raises(BenchError, match="lies inside the repository"):
        build_example(REPO_ROOT / inside, REPO_ROOT)
    assert not (REPO_ROOT / "runs" / "example").exists()


def test_example_refused_in_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("keep", encoding="utf-8")
    result = CliRunner().invoke(audit, ["--example", str(tmp_path)])
    assert result.exit_code == 1 and "exists and is not an empty folder" in result.output
    assert "Traceback" not in result.output and (tmp_path / "x").read_text(encoding="utf-8") == "keep"


def _flip_score_byte(root: Path) -> str:
    """A flipped byte in a run: the last digit of the first line's score."""
    rel = "runs/keyword-71k/bm25-standin@100.trec"
    data = bytearray((root / rel).read_bytes())
    end = data.index(b" ", data.index(b" Q0 ") + 4)  # after the docid
    end = data.index(b" ", end + 1)  # after the rank
    end = data.index(b" ", end + 1)  # after the score
    data[end - 1] = ord("1") if data[end - 1] != ord("1") else ord("2")
    (root / rel).write_bytes(bytes(data))
    return rel


def _edit_deviation(root: Path) -> str:
    """An edited deviation: words added to the first entry's "why"."""
    text = (root / "DEVIATIONS.md").read_text(encoding="utf-8")
    at = text.index("- why: ") + len("- why: ")
    (root / "DEVIATIONS.md").write_text(text[:at] + "(edited later) " + text[at:], encoding="utf-8")
    return "DEVIATIONS.md"


def _foreign_candidate(root: Path) -> str:
    """A foreign candidate: the top passage of the first query in a reranked run replaced by one the first
    stage never returned."""
    rel = "runs/keyword-71k/bm25-standin@20.trec"
    lines = (root / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    fields = lines[0].split(" ")
    fields[2] = "999999#0"
    lines[0] = " ".join(fields)
    (root / rel).write_text("".join(lines), encoding="utf-8")
    return rel


TAMPERS = [(_flip_score_byte, 5), (_edit_deviation, 3), (_foreign_candidate, 9)]


@pytest.mark.parametrize(("tamper", "row"), TAMPERS)
def test_tamper_fails_the_row_the_docs_name(
    example: Path, tmp_path: Path, tamper: Callable[[Path], str], row: int
) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(example), str(clone)], check=True)
    rel = tamper(clone)
    git(clone, "-c", "user.name=t", "-c", "user.email=t@invalid", "commit", "-qam", "tamper")
    result = _audit(clone)
    assert result.exit_code == 1, result.output
    assert _verdicts(result.output)[row] == "FAIL", result.output
    failing = [line for line in result.output.splitlines() if line.split()[:1] == [str(row)]]
    assert rel.split("/")[-1] in failing[0] or rel in result.output.split(f"\n{row + 1} ")[0], result.output
    # docs/reviewing.md names this row for this tamper
    doc = REVIEWING.read_text(encoding="utf-8")
    assert f"<!-- tamper: {tamper.__name__.lstrip('_')} row {row} -->" in doc
