"""`bench audit`: today's repository says "not yet" plainly; a committed study built from a
rehearsal passes every row but the timestamps; each kind of tampering is named by its row; bad input
(stray file, missing run, shallow clone) gets a clear message."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.audit.rows import Row, exit_code
from bench.audit.run import audit
from bench.cli import cli
from tests.audit.conftest import StudyRepo
from tests.conftest import REPO_ROOT, git

pytestmark = [pytest.mark.typesense, pytest.mark.model, pytest.mark.slow]
RUN = "runs/vector-71k/minilm-standin@100.trec"
RESULT = "results/quality/vector-71k.json"


def by_number(rows: list[Row]) -> dict[int, Row]:
    return {r.number: r for r in rows}


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def test_todays_repository_says_not_yet_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_ROOT", str(REPO_ROOT))
    result = CliRunner().invoke(cli, ["audit"])
    assert result.exit_code in (0, 3), result.output
    assert " FAIL " not in result.output
    assert re.search(r"^ 2  timestamps .* (NOT YET|OK) ", result.output, flags=re.M)
    assert len(re.findall(r"^ ?[1-9]0?  ", result.output, flags=re.M)) == 10
    assert re.search(
        r"^ 9  reranked runs reorder .* NOT YET  no reranked run committed yet$", result.output, flags=re.M
    )
    row10 = r"^10  results written by the analysis code on record .* NOT YET  no study committed yet"
    assert re.search(row10, result.output, flags=re.M)
    seconds = float(re.findall(r"; ([\d.]+) s\)", result.output)[-1])
    assert seconds < 60


def test_committed_study_passes_every_row_but_the_stamps(study_repo: StudyRepo) -> None:
    rows = by_number(audit(study_repo.root, qrels=study_repo.qrels))
    assert {n: r.verdict for n, r in rows.items()} == {
        1: "OK",
        2: "NOT YET",
        3: "OK",
        4: "OK",
        5: "OK",
        6: "OK",
        7: "OK",
        8: "OK",
        9: "OK",
        10: "OK",
    }
    assert exit_code(list(rows.values())) == 3
    compared = [d for d in rows[5].details if d.startswith("OK")]
    assert f"OK   {RESULT}" in compared and "OK   results/quality/study.json" in compared
    assert "OK   results/report.md" in compared
    assert rows[6].reason.startswith("1 manifests in")


def test_qrels_found_by_hash_among_committed_runs_is_not_yet_without_it(study_repo: StudyRepo) -> None:
    rows = by_number(audit(study_repo.root))  # no --qrels, and the qrels are not committed
    assert rows[5].verdict == "NOT YET"
    assert "the qrels qrels.tsv" in rows[5].reason and "--qrels FILE" in rows[5].reason


def test_tampered_run_file_is_named(clone: Path, study_repo: StudyRepo) -> None:
    path = clone / RUN
    lines = path.read_text().splitlines(keepends=True)
    q, q0, doc, rank, score, tag = lines[0].split()
    lines[0] = f"{q} {q0} {doc} {rank} {float(score) + 1.0!r} {tag}\n"  # still the top score: a valid run
    path.write_text("".join(lines))
    commit_all(clone, "tamper a run")
    rows = by_number(audit(clone, qrels=study_repo.qrels))
    assert rows[5].verdict == "FAIL"
    assert any(d.startswith(f"{RUN}: SHA-256") and RESULT in d for d in rows[5].details)
    assert f"FAIL {RESULT}: differs from the recomputed file" in rows[5].details
    assert {n: r.verdict for n, r in rows.items() if n != 5} == {
        1: "OK",
        2: "NOT YET",
        3: "OK",
        4: "OK",
        6: "OK",
        7: "OK",
        8: "OK",
        9: "OK",
        10: "OK",
    }


def test_a_foreign_id_in_a_committed_reranked_run_is_named(
    clone: Path, study_repo: StudyRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One foreign id in one reranked run, committed together with the results a report without
    the check makes of it. Row 9 names the file, query and id, row 5's rerun of the report refuses the run,
    and the audit exits 1 (before, rows 5 and 9 said nothing: every row but the stamps OK, exit 3)."""
    import analysis.reporting.study
    from analysis.reporting.report import write_report

    rel = "runs/vector-71k/minilm-standin@20.trec"
    path = clone / rel
    lines = path.read_text().splitlines(keepends=True)
    q, q0, _, rank, score, tag = lines[2].split()
    lines[2] = f"{q} {q0} 99999999#0 {rank} {score} {tag}\n"
    path.write_text("".join(lines))
    with monkeypatch.context() as m:
        # raising=False: so that the test runs on the code before the check too, and fails there at row 5
        m.setattr(analysis.reporting.study, "check_stages_reorder", lambda *a, **k: None, raising=False)
        write_report(clone / "runs", study_repo.qrels, clone / "results")
    commit_all(clone, "one foreign id, results recomputed")
    rows = by_number(audit(clone, qrels=study_repo.qrels))
    assert rows[5].verdict == "FAIL" and "99999999#0" in rows[5].reason
    assert "analysis report failed on runs/: TrecFormatError: " in rows[5].reason
    assert rows[9].verdict == "FAIL"
    assert rows[9].reason.startswith(
        f"1 of {len(rows[9].details)} run files break it; first: {rel}:3 (reranked run file)"
    )
    assert f"in query {q!r} rank {rank} holds '99999999#0': not a first-stage candidate" in rows[9].reason
    assert sum(d.startswith("OK   runs/") for d in rows[9].details) == len(rows[9].details) - 1
    monkeypatch.setenv("BENCH_ROOT", str(clone))
    result = CliRunner().invoke(cli, ["audit", "--qrels", str(study_repo.qrels)])
    assert result.exit_code == 1, result.output
    row9 = rf"^ 9  reranked runs reorder .* FAIL .*{re.escape(rel)}:3 .*'{re.escape(q)}'.*'99999999#0'"
    assert re.search(row9, result.output, flags=re.M), result.output


def test_tampered_result_file_is_named(clone: Path, study_repo: StudyRepo) -> None:
    path = clone / RESULT
    doc = json.loads(path.read_text())
    doc["first_stage"]["means"]["ndcg@10"] += 0.01
    path.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")
    commit_all(clone, "tamper a result")
    rows = by_number(audit(clone, qrels=study_repo.qrels))
    assert rows[5].verdict == "FAIL"
    assert rows[5].reason == f"1 problem(s); first: FAIL {RESULT}: differs from the recomputed file"


def test_tampered_manifest_hash_is_named(clone: Path, study_repo: StudyRepo) -> None:
    path = clone / "results" / "manifest.json"
    doc = json.loads(path.read_text())
    doc["sessions"][0]["provenance"]["plan_sha256"] = "0" * 64
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    commit_all(clone, "tamper a manifest")
    rows = by_number(audit(clone, qrels=study_repo.qrels))
    assert rows[6].verdict == "FAIL"
    assert rows[6].details == (
        "results/manifest.json /sessions/0/provenance: plan_sha256 0000000000000000... is not the hash of "
        "any committed version of PLAN.md",
    )


def test_edited_deviations_line_is_named(clone: Path, study_repo: StudyRepo) -> None:
    path = clone / "DEVIATIONS.md"
    text = path.read_text()
    path.write_text(text.replace("- date: 2026-11-29", "- date: 2026-11-28", 1))
    commit_all(clone, "edit an old deviation")
    rows = by_number(audit(clone, qrels=study_repo.qrels))
    assert rows[3].verdict == "FAIL"
    assert re.match(
        r"DEVIATIONS\.md of commit [0-9a-f]{7} \(\d{4}-\d\d-\d\d\) was edited or removed "
        r"later, not appended to",
        rows[3].reason,
    )
    assert rows[6].verdict == "OK"  # the manifest names the version that existed when the study ran


def test_stray_file_and_missing_run(clone: Path, study_repo: StudyRepo) -> None:
    (clone / "results" / "notes.txt").write_text("remember to check\n")
    git(clone, "rm", "-q", "runs/vector-71k/minilm-standin@50.trec")
    commit_all(clone, "stray file, missing run")
    rows = by_number(audit(clone, qrels=study_repo.qrels))
    assert rows[7].verdict == "FAIL"
    assert rows[7].reason.startswith("1 problem(s); first: results/notes.txt: stray file")
    assert rows[5].verdict == "FAIL"
    assert any(
        "names runs/vector-71k/minilm-standin@50.trec, which is not committed" in d for d in rows[5].details
    )


def test_text_in_a_result_is_refused(clone: Path, study_repo: StudyRepo) -> None:
    queries = {}
    for line in (study_repo.rehearsal.parent / "mini-beir" / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        queries[q["_id"]] = q["text"]
    qid, text = sorted(queries.items())[0]
    (clone / "results" / "judged").mkdir()
    labels = {"pairs": [{"qid": qid, "q": text}]}
    (clone / "results" / "judged" / "labels.json").write_text(json.dumps(labels))
    commit_all(clone, "a result with a query text")
    rows = by_number(audit(clone, qrels=study_repo.qrels))
    assert rows[7].verdict == "FAIL"
    assert "results/judged/labels.json: contains the text of a query" in rows[7].reason


def test_shallow_clone_needs_the_full_history(study_repo: StudyRepo, tmp_path: Path) -> None:
    target = tmp_path / "shallow"
    url = f"file://{study_repo.root}"
    subprocess.run(["git", "clone", "-q", "--depth", "1", url, str(target)], check=True)
    rows = by_number(audit(target, qrels=study_repo.qrels))
    assert rows[1].verdict == "FAIL"
    assert rows[1].reason.startswith(
        "shallow clone: the audit needs the full history; run `git fetch --unshallow`"
    )
    assert exit_code(list(rows.values())) == 1
