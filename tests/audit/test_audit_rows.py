"""Single audit rows on tiny repositories (fast; the full study is in test_audit.py)."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from pathlib import Path

from bench.audit.committed import results_row
from bench.audit.history import deviations_row, history_problem, licences_row, plan_row
from bench.audit.rows import Row, exit_code, format_table

PLAN = "# A plan\n\n## Data\nbody\n"
DEV = "# Deviations from PLAN.md\n\nheader\n"
ENTRY = (
    "\n## D-001: x\n- date: 2026-11-29\n- plan section: {section}\n- what changes: a\n- why: b\n"
    "- expected effect on results: c\n"
)
TODAY = dt.date(2026, 11, 30)


def test_plan_row(tmp_git_repo: Callable[..., Path]) -> None:
    good = tmp_git_repo([{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV}])
    assert plan_row(good, history_problem(good)).verdict == "OK"
    two = tmp_git_repo([{"PLAN.md": PLAN, "README.md": "hi"}])
    row = plan_row(two, history_problem(two))
    assert row.verdict == "FAIL" and row.reason.endswith("holds ['PLAN.md', 'README.md'], not only PLAN.md")
    changed = tmp_git_repo([{"PLAN.md": PLAN}, {"PLAN.md": PLAN + "more\n"}])
    assert plan_row(changed, history_problem(changed)).reason.startswith("PLAN.md on HEAD differs")


def test_deviations_row(tmp_git_repo: Callable[..., Path]) -> None:
    good = tmp_git_repo(
        [{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV}, {"DEVIATIONS.md": DEV + ENTRY.format(section="Data")}]
    )
    row = deviations_row(good, None, TODAY)
    assert row.verdict == "OK"
    assert row.reason.startswith("1 entries, every plan section exists; 2 versions in the history")
    bad = tmp_git_repo([{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV + ENTRY.format(section="Costs")}])
    row = deviations_row(bad, None, TODAY)
    assert row.verdict == "FAIL"
    assert row.reason == "DEVIATIONS.md line 7: plan section 'Costs' is not a '## ' heading of PLAN.md"


def test_licences_row(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([{"PLAN.md": PLAN}])
    row = licences_row(root)
    assert row.verdict == "FAIL" and row.reason.startswith(
        "LICENSE is missing; LICENSES/CC-BY-4.0.txt is missing"
    )


def test_results_row_not_yet_with_other_results_only(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([{"PLAN.md": PLAN}, {"results/costs.json": "{}", "results/README.md": "x"}])
    row = results_row(root)
    assert row.verdict == "NOT YET"
    assert row.reason.endswith(
        "(no runs/, no results/quality/); 1 other result files are checked by rows 6 and 7"
    )
    runs_only = tmp_git_repo([{"PLAN.md": PLAN}, {"runs/first-stage/s.trec": "1 Q0 d 1 1.0 s\n"}])
    row = results_row(runs_only)
    assert row.verdict == "FAIL" and row.reason.startswith("results/quality/study.json is not committed")


def test_not_a_git_checkout(tmp_path: Path) -> None:
    (tmp_path / "PLAN.md").write_text(PLAN)
    reason = history_problem(tmp_path)
    assert reason is not None and "is not a git checkout with commits" in reason
    assert plan_row(tmp_path, reason).verdict == "FAIL"


def test_exit_codes_and_table() -> None:
    ok, later, bad = Row(1, "a", "OK", "fine"), Row(2, "b", "NOT YET", "later"), Row(3, "c", "FAIL", "no")
    assert (exit_code([ok]), exit_code([ok, later]), exit_code([ok, later, bad])) == (0, 3, 1)
    table = format_table([ok, Row(2, "bb", "FAIL", "x", tuple(f"d{i}" for i in range(25)))])
    assert " 2  bb  FAIL     x" in table and "d19" in table and "d20" not in table
    assert table.endswith("... and 5 more")


def test_manifests_row_accepts_sessions_of_other_commits_with_the_same_code(
    tmp_git_repo: Callable[..., Path],
) -> None:
    """A study's sessions may name different commits (the run files of a stopped session
    committed in between); row 6 checks that each recorded code digest is its commit's, so the same code
    is shown, and a digest that is not its commit's fails."""
    import hashlib
    import json

    from bench.audit.committed import manifests_row
    from bench.records.codeversion import code_digest
    from tests.conftest import git

    code = {"PLAN.md": PLAN, "DEVIATIONS.md": DEV, "datasets.lock": "{}\n", "bench/a.py": "1\n"}
    root = tmp_git_repo([code, {"runs/s/m@100.trec": "q Q0 d 1 1.0 s/m@100\n"}])
    first, second = (git(root, "rev-parse", f"HEAD~{n}").strip() for n in (1, 0))
    sha = {n: hashlib.sha256(t.encode()).hexdigest() for n, t in (("p", PLAN), ("d", DEV), ("l", "{}\n"))}

    def manifest(commit: str, digest: str | None) -> dict[str, object]:
        return {
            "plan_sha256": sha["p"],
            "deviations_sha256": sha["d"],
            "datasets_lock_sha256": sha["l"],
            "git": {"commit": commit, "code_digest": digest},
        }

    digest = code_digest(root, first)
    assert digest is not None and digest == code_digest(root, second)
    study = root / "results" / "study.json"
    study.parent.mkdir()
    study.write_text(
        json.dumps(
            {"sessions": [{"provenance": manifest(first, digest)}, {"provenance": manifest(second, digest)}]}
        )
    )
    git(root, "add", "results")
    git(root, "commit", "-q", "-m", "results")
    row = manifests_row(root, None)
    assert (row.verdict, row.number) == ("OK", 6), row
    study.write_text(json.dumps({"sessions": [{"provenance": manifest(second, "0" * 64)}]}))
    git(root, "commit", "-q", "-am", "tampered")
    row = manifests_row(root, None)
    assert row.verdict == "FAIL" and f"is not the digest of commit {second[:12]}'s code" in row.reason


def test_ids_only_row_allows_run_files_where_the_phases_write_them(tmp_git_repo: Callable[..., Path]) -> None:
    """The determinism, dtype-check and pitfalls runs are committed under results/ (the
    report and row 5 read the pitfalls runs there); row 7 allows .trec files in exactly those folders, checks
    their lines, and still calls a .trec elsewhere under results/ stray."""
    from bench.audit.committed import ids_only_row
    from bench.core.paths import DTYPE_CHECK_DIR, RUN_FOLDERS
    from tests.conftest import git

    assert RUN_FOLDERS["dtype-check gpu"] == f"{DTYPE_CHECK_DIR}/gpu/runs"
    line = "q1 Q0 d1 1 0.5 hybrid-71k/bge-v2-m3@100\n"  # the run tag its place asks for
    files = {
        f"{RUN_FOLDERS[p]}/hybrid-71k/bge-v2-m3@100.trec": line
        for p in ("pitfalls", "determinism", "dtype-check cpu-fp32", "dtype-check gpu")
    }
    root = tmp_git_repo([{"runs/hybrid-71k/bge-v2-m3@100.trec": line, **files}])
    row = ids_only_row(root)
    assert row.verdict == "OK", row
    assert row.reason.startswith("5 study files")
    (root / "results/quality").mkdir(parents=True)
    (root / "results/quality/x.trec").write_text(line)
    (root / RUN_FOLDERS["determinism"] / "hybrid-71k/bad.trec").write_text("not a run line\n")
    git(root, "add", "results")
    git(root, "commit", "-q", "-m", "two bad files")
    row = ids_only_row(root)
    assert row.verdict == "FAIL"
    assert any(
        d.startswith("results/quality/x.trec: stray file") and "results/pitfalls/runs" in d
        for d in row.details
    )
    assert any(
        d.startswith(f"{RUN_FOLDERS['determinism']}/hybrid-71k/bad.trec line 1: not a TREC run line")
        for d in row.details
    )


def test_timestamps_row_is_not_yet_while_a_proof_is_only_pending(tmp_git_repo: Callable[..., Path]) -> None:
    """Proofs with only pending calendar attestations (what `timestamps stamp` leaves) are NOT YET, not OK:
    until `timestamps upgrade` merges the Bitcoin attestation in, a pending proof proves no date. Before the
    fix the row said OK (found by tests/runbook: the audit of the runbook's end exited 0)."""
    from bench.audit.history import timestamps_row
    from tests.support.ministudy import write_proof

    root = tmp_git_repo([{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV}])
    write_proof(PLAN.encode(), root / "PLAN.md.ots")
    sha = hashlib.sha256(DEV.encode()).hexdigest()
    write_proof(DEV.encode(), root / "timestamps" / "DEVIATIONS.md" / f"{sha}.ots")
    row = timestamps_row(root, history_problem(root))
    assert row.verdict == "NOT YET"
    assert row.reason.startswith("2 pending: the Bitcoin attestations arrive hours after stamping")
    assert "timestamps upgrade" in row.reason
    assert exit_code([row]) == 3
    write_proof(b"another file", root / "PLAN.md.ots")  # a proof of other bytes still fails
    assert timestamps_row(root, history_problem(root)).verdict == "FAIL"


def _trec(run: dict[str, list[str]], tag: str) -> str:
    return "".join(
        f"{q} Q0 {d} {r} {-float(r)!r} {tag}\n" for q in sorted(run) for r, d in enumerate(run[q], 1)
    )


def test_reorder_row_over_every_run_folder(tmp_git_repo: Callable[..., Path]) -> None:
    """Row 9: each committed reranked run of every run folder against its committed first stage."""
    from bench.audit.reorder import reorder_row

    first = {"q1": ["a", "b", "c", "d"], "q2": ["e", "f", "g"]}
    good = {"q1": ["b", "a", "c", "d"], "q2": ["f", "e", "g"]}  # depth 2: top 2 reordered, tail kept
    files = {
        "PLAN.md": PLAN,
        "runs/README.md": "x",
        "runs/first-stage/s.trec": _trec(first, "f"),
        "runs/s/bge-v2-m3@2.trec": _trec(good, "r"),
        "results/dtype-check/gpu/runs/s/bge-v2-m3@100.trec": _trec({"q2": ["g", "e", "f"]}, "r"),
        "results/pitfalls/runs/s/qwen3-0.6b@2.trec": _trec(good, "r"),
    }
    assert reorder_row(tmp_git_repo([{"PLAN.md": PLAN}])).verdict == "NOT YET"
    row = reorder_row(tmp_git_repo([files]))
    assert row.number == 9 and row.verdict == "OK" and row.reason.startswith("3 reranked run files hold")
    assert row.details == (
        "OK   results/dtype-check/gpu/runs/s/bge-v2-m3@100.trec",
        "OK   results/pitfalls/runs/s/qwen3-0.6b@2.trec",
        "OK   runs/s/bge-v2-m3@2.trec",
    )
    swapped = {"q1": ["c", "a", "b", "d"], "q2": good["q2"]}  # rank 3's c into the top 2
    pitfall = "results/pitfalls/runs/s/qwen3-0.6b@2.trec"
    row = reorder_row(tmp_git_repo([{**files, pitfall: _trec(swapped, "r")}]))
    assert row.verdict == "FAIL" and row.reason.startswith(
        "1 of 3 run files break it; first: results/pitfalls/runs/s/qwen3-0.6b@2.trec:1 (reranked run file)"
    )
    assert "in query 'q1' rank 1 holds 'c': the first stage ranks it 3, beyond k = 2" in row.reason
    no_first = {k: v for k, v in files.items() if k != "runs/first-stage/s.trec"}
    row = reorder_row(tmp_git_repo([{**no_first, "runs/s/m@x.trec": "q1 Q0 a 1 1.0 r\n"}]))
    assert row.verdict == "FAIL" and len(row.details) == 4
    assert "FAIL runs/s/m@x.trec: not named <run id>@<k>.trec" in row.details[3]
    assert row.details[2] == (
        "FAIL runs/s/bge-v2-m3@2.trec: its first-stage run runs/first-stage/s.trec is "
        "not committed; commit it (bench first-stage s)"
    )
