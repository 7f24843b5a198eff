"""Each forgery a hostile reviewer tried on a copy of the repository, built here in a scratch
repository, makes its row FAIL (or NOT YET for an attestation nobody has verified), naming the file and the
commit; none says OK and none prints a traceback. Every test failed on the code before these checks."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentimestamps.core.notary import BitcoinBlockHeaderAttestation
from opentimestamps.core.op import OpSHA256
from opentimestamps.core.serialize import BytesSerializationContext
from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

from bench.audit.committed import datasets_row, ids_only_row, results_row
from bench.audit.history import deviations_row, history_problem, plan_row, timestamps_row
from bench.audit.reorder import reorder_row
from bench.audit.rows import exit_code
from bench.cli import cli
from bench.integrity import git as bgit
from bench.integrity import headers, timestamps
from tests.conftest import REPO_ROOT, git

PLAN = "# A plan\n\n## Data\nbody\n"
DEV = "# Deviations from PLAN.md\n\nheader\n"
ENTRY = (
    "\n## D-001: x\n- date: {date}\n- plan section: Data\n- what changes: a\n- why: b\n"
    "- expected effect on results: c\n"
)
FORGED_HEIGHT = 900_001


def forged_proof(data: bytes, height: int = FORGED_HEIGHT) -> bytes:
    """The offline forgery, in ten lines: a proof that commits to the file's SHA-256 with a made-up
    Bitcoin attestation (the "merkle root" is the digest itself)."""
    ts = Timestamp(hashlib.sha256(data).digest())
    ts.attestations.add(BitcoinBlockHeaderAttestation(height))
    ctx = BytesSerializationContext()
    DetachedTimestampFile(OpSHA256(), ts).serialize(ctx)
    return bytes(ctx.getbytes())


def stamp_everything(root: Path) -> dict[str, bytes]:
    """Forged proofs of PLAN.md and every DEVIATIONS.md version; returns proof path -> the digest it
    commits to (its fake merkle root)."""
    roots = {}
    plan = (root / "PLAN.md").read_bytes()
    (root / "PLAN.md.ots").write_bytes(forged_proof(plan))
    roots["PLAN.md.ots"] = hashlib.sha256(plan).digest()
    for version in bgit.file_versions(root, "DEVIATIONS.md"):
        sha = hashlib.sha256(version.data).hexdigest()
        path = timestamps.deviation_proof_path(root, sha)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(forged_proof(version.data))
        roots[str(path.relative_to(root))] = bytes.fromhex(sha)
    return roots


def cli_run(root: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setenv("BENCH_ROOT", str(root))
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_forged_attestation_is_not_yet_with_the_ots_command(
    tmp_git_repo: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_git_repo([{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV}])
    stamp_everything(root)
    row = timestamps_row(root, history_problem(root))
    assert row.verdict == "NOT YET" and exit_code([row]) == 3, row
    assert row.reason.startswith("2 bitcoin-unchecked: no Bitcoin attestation is verified")
    plan_sha = hashlib.sha256(PLAN.encode()).hexdigest()
    assert f"ots verify -d {plan_sha} PLAN.md.ots" in row.reason
    code, out = cli_run(root, "timestamps", "verify", monkeypatch=monkeypatch)
    assert code == 3 and f"ots verify -d {plan_sha} PLAN.md.ots" in out


def test_the_authors_merkle_roots_file_never_verifies(
    tmp_git_repo: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second forgery: the same commit adds timestamps/bitcoin-merkle-roots.json holding the digests."""
    root = tmp_git_repo([{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV}])
    roots = stamp_everything(root)
    doc = {
        "format": "bitcoin-merkle-roots/1",
        "byte_order": "display",
        "roots": {str(FORGED_HEIGHT): r[::-1].hex() for r in list(roots.values())[:1]},
    }
    (root / timestamps.MERKLE_ROOTS).write_text(json.dumps(doc))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "proofs and 'block data'")
    verdicts = {r.file: r.report for r in timestamps.verify_all(root).rows}
    assert verdicts["PLAN.md"].verdict == "bitcoin-unchecked"
    assert "checked against the repository's own file, which is not a verification" in str(
        verdicts["PLAN.md"].attestations
    )
    row = timestamps_row(root, history_problem(root))
    assert row.verdict != "OK" and "verified" not in row.reason.split(":")[0]
    code, out = cli_run(root, "timestamps", "verify", monkeypatch=monkeypatch)
    assert code in (1, 3) and " verified " not in out


def mined_header(prev: bytes, merkle_root: bytes) -> bytes:
    """A header over ``merkle_root`` that meets regtest's target (nBits 0x207fffff): a few hashes."""
    for nonce in range(10_000):
        header = (
            (1).to_bytes(4, "little")
            + prev
            + merkle_root
            + (0).to_bytes(4, "little")
            + (0x207FFFFF).to_bytes(4, "little")
            + nonce.to_bytes(4, "little")
        )
        target = headers.bits_target(0x207FFFFF)
        if int.from_bytes(headers.block_hash(header), "little") <= target:
            return header
    raise AssertionError("no nonce found")


def test_reviewer_block_headers_verify_and_are_checked(
    tmp_git_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a header file the reviewer made verifies, and only a consistent one: each header's proof of work
    against its own nBits, within the proof-of-work limit (regtest's here, by monkeypatch: a mainnet header
    cannot be mined in a test), and the parent links of consecutive heights."""
    root = tmp_git_repo([{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV}])
    plan_root = stamp_everything(root)["PLAN.md.ots"]
    before = mined_header(b"\x00" * 32, b"\x11" * 32)
    block = mined_header(headers.block_hash(before), plan_root)
    good = tmp_path / "headers.txt"
    good.write_text(f"# from my node\n{FORGED_HEIGHT - 1} {before.hex()}\n{FORGED_HEIGHT} {block.hex()}\n")
    code, out = cli_run(root, "timestamps", "verify", "--headers", str(good), monkeypatch=monkeypatch)
    assert code == 1 and "not within Bitcoin's proof-of-work limit" in out  # mainnet's limit by default
    monkeypatch.setattr(headers, "POW_LIMIT", 0x7FFFFF << 232)
    verdicts = {r.file: r.report.verdict for r in timestamps.verify_all(root, good).rows}
    assert verdicts["PLAN.md"] == "verified"
    assert [v for k, v in verdicts.items() if k != "PLAN.md"] == ["bitcoin mismatch"]  # another root there
    code, out = cli_run(root, "audit", "--headers", str(good), monkeypatch=monkeypatch)
    row2 = r"^ 2  timestamps .* FAIL .*1 bitcoin mismatch, 1 verified"
    assert code == 1 and re.search(row2, out, re.M), out
    broken = tmp_path / "broken.txt"
    orphan = mined_header(b"\x22" * 32, plan_root)
    broken.write_text(f"{FORGED_HEIGHT - 1} {before.hex()}\n{FORGED_HEIGHT} {orphan.hex()}\n")
    code, out = cli_run(root, "timestamps", "verify", "--headers", str(broken), monkeypatch=monkeypatch)
    assert code == 1 and "does not name the header of height 900000 as its parent" in out
    committed = root / "my-headers.txt"
    committed.write_text(good.read_text())
    git(root, "add", "my-headers.txt")
    git(root, "commit", "-q", "-m", "headers")
    monkeypatch.setenv(headers.HEADERS_ENV, str(committed))
    code, out = cli_run(root, "timestamps", "verify", monkeypatch=monkeypatch)
    assert code == 1 and "committed in the repository" in out


@pytest.mark.parametrize("kind", ["directory", "link", "malformed", "other digest"])
def test_bad_proof_files_fail_naming_the_file(
    kind: str, tmp_git_repo: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_git_repo([{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV}])
    stamp_everything(root)
    proof = root / "PLAN.md.ots"
    proof.unlink()
    if kind == "directory":
        proof.mkdir()
    elif kind == "link":
        (root.parent / "elsewhere.ots").write_bytes(forged_proof(PLAN.encode()))
        proof.symlink_to(root.parent / "elsewhere.ots")
    elif kind == "malformed":
        proof.write_bytes(b"\x00OpenTimestamps\x00\x00Proof\x00garbage")
    else:
        proof.write_bytes(forged_proof(b"another file"))
    row = timestamps_row(root, history_problem(root))
    assert row.verdict == "FAIL" and any(d.startswith("PLAN.md: ") for d in row.details)
    code, out = cli_run(root, "timestamps", "verify", monkeypatch=monkeypatch)
    assert code == 1 and "PLAN.md.ots" in out


def test_a_reverted_plan_change_fails_row_1_naming_the_commit(tmp_git_repo: Callable[..., Path]) -> None:
    edited = PLAN.replace("body", "b0dy")
    root = tmp_git_repo([{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV}, {"PLAN.md": edited}])
    changed = git(root, "rev-parse", "HEAD").strip()
    git(root, "revert", "--no-edit", "HEAD")
    row = plan_row(root, history_problem(root))
    assert row.verdict == "FAIL"
    assert row.reason.startswith(f"commit {changed[:7]} holds a PLAN.md that differs")


def test_a_plan_change_inside_a_merge_fails_row_1(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV}])
    git(root, "checkout", "-q", "-b", "side")
    (root / "x.txt").write_text("x")
    git(root, "add", "x.txt")
    git(root, "commit", "-q", "-m", "side")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "--no-ff", "--no-commit", "side")
    (root / "PLAN.md").write_text(PLAN + "changed in the merge\n")
    git(root, "add", "PLAN.md")
    git(root, "commit", "-q", "-m", "merge")
    merge = git(root, "rev-parse", "HEAD").strip()
    (root / "PLAN.md").write_text(PLAN)
    git(root, "commit", "-q", "-am", "restore")
    row = plan_row(root, history_problem(root))
    assert row.verdict == "FAIL" and row.reason.startswith(f"commit {merge[:7]} holds a PLAN.md")


def test_a_deviation_that_lived_only_in_a_merge_fails_row_3(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV}])
    git(root, "checkout", "-q", "-b", "side")
    (root / "x.txt").write_text("x")
    git(root, "add", "x.txt")
    git(root, "commit", "-q", "-m", "side")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "--no-ff", "--no-commit", "side")
    today = git(root, "log", "-1", "--format=%cs").strip()
    (root / "DEVIATIONS.md").write_text(DEV + ENTRY.format(date=today))
    git(root, "add", "DEVIATIONS.md")
    git(root, "commit", "-q", "-m", "merge")
    merge = git(root, "rev-parse", "HEAD").strip()
    (root / "DEVIATIONS.md").write_text(DEV)
    git(root, "commit", "-q", "-am", "drop it")
    assert len(bgit.file_versions(root, "DEVIATIONS.md")) == 2
    row = deviations_row(root, None)
    assert row.verdict == "FAIL" and row.reason.startswith(f"DEVIATIONS.md of commit {merge[:7]}")
    assert "was edited or removed later" in row.reason
    stamp_everything(root)  # the merge's version has its own proof row
    assert any(r.file.startswith(f"DEVIATIONS.md @ {merge[:7]}") for r in timestamps.verify_all(root).rows)


def test_the_repositorys_own_history_lists_every_deviations_version() -> None:
    """14 distinct versions of DEVIATIONS.md exist in this repository's commits up to the branch that added
    these checks, one first written by the merge 9a85e34; `git log --follow` listed 13."""
    if git(REPO_ROOT, "rev-parse", "--is-shallow-repository").strip() == "true":
        pytest.skip("shallow clone")
    versions = bgit.file_versions(REPO_ROOT, "DEVIATIONS.md")
    lines = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "cat-file", "--batch-check=%(objectname)"],
        check=True,
        capture_output=True,
        text=True,
        input="".join(f"{c}:DEVIATIONS.md\n" for c in git(REPO_ROOT, "rev-list", "HEAD").split()),
    ).stdout.splitlines()
    blobs = {line for line in lines if not line.endswith(" missing")}
    assert len(versions) == len(blobs) >= 14
    assert any(v.commit.startswith("9a85e34") for v in versions)
    labels = [r.file for r in timestamps.verify_all(REPO_ROOT).rows if r.file.startswith("DEVIATIONS.md @")]
    assert len(labels) == len(versions)


def test_dates_are_reported(tmp_git_repo: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_git_repo([{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV + ENTRY.format(date="2099-01-01")}])
    row = deviations_row(root, None, today=__import__("datetime").date(2100, 1, 1))
    commit = git(root, "rev-parse", "HEAD").strip()
    assert row.verdict == "FAIL" and f"DEVIATIONS.md of commit {commit[:7]}" in row.reason
    assert "D-001 is dated 2099-01-01, after the commit that added it" in row.reason
    env = {**os.environ, "GIT_COMMITTER_DATE": "2001-01-01T00:00:00+00:00"}
    (root / "y.txt").write_text("y")
    git(root, "add", "y.txt")
    subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "backdated",
        ],
        check=True,
        env=env,
    )
    backdated = git(root, "rev-parse", "HEAD").strip()
    row = plan_row(root, history_problem(root))
    assert row.verdict == "FAIL" and row.reason.startswith(f"commit {backdated[:7]} is dated 2001-01-01")


def test_a_shallow_clone_is_refused_by_timestamps_verify(
    tmp_git_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_git_repo(
        [{"PLAN.md": PLAN}, {"DEVIATIONS.md": DEV}, {"DEVIATIONS.md": DEV + "more\n"}, {"x": "1"}, {"y": "2"}]
    )
    target = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{root}", str(target)], check=True)
    code, out = cli_run(target, "timestamps", "verify", monkeypatch=monkeypatch)
    assert code == 1 and "shallow clone" in out and "git fetch --unshallow" in out
    assert len(out.strip().splitlines()) == 1


def run_line(tag: str, score: float = 1.0) -> str:
    return f"q1 Q0 d1 1 {score} {tag}\nq1 Q0 d2 2 {score / 2} {tag}\n"


def test_swapped_runs_fail_row_7(tmp_git_repo: Callable[..., Path]) -> None:
    good = {
        "runs/hybrid-71k/bge-v2-m3@20.trec": run_line("hybrid-71k/bge-v2-m3@20"),
        "runs/hybrid-71k/qwen3-4b@20.trec": run_line("hybrid-71k/qwen3-4b@20"),
        "runs/first-stage/hybrid-71k.trec": run_line("first-stage/hybrid-71k"),
    }
    assert ids_only_row(tmp_git_repo([good])).verdict == "OK"
    swapped = {**good, "runs/hybrid-71k/qwen3-4b@20.trec": run_line("hybrid-71k/bge-v2-m3@20")}
    row = ids_only_row(tmp_git_repo([swapped]))
    assert row.verdict == "FAIL" and row.reason == (
        "1 problem(s); first: runs/hybrid-71k/qwen3-4b@20.trec line 1: run tag 'hybrid-71k/bge-v2-m3@20' is "
        "not 'hybrid-71k/qwen3-4b@20', which its place (<stage>/<model>@<k>) says: the file belongs to "
        "another run; put it back where its tag says"
    )


def test_a_committed_link_fails_row_7_with_its_own_message(
    tmp_git_repo: Callable[..., Path], tmp_path: Path
) -> None:
    outside = tmp_path / "outside.trec"
    outside.write_text(run_line("hybrid-71k/bge-v2-m3@20"))
    root = tmp_git_repo([{"PLAN.md": PLAN}])
    link = root / "runs/hybrid-71k/bge-v2-m3@20.trec"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    git(root, "add", "runs")
    git(root, "commit", "-q", "-m", "a linked run")
    row = ids_only_row(root)
    assert row.verdict == "FAIL" and row.reason.startswith(
        "1 problem(s); first: runs/hybrid-71k/bge-v2-m3@20.trec: committed as a symbolic link"
    )
    for other in (results_row(root), reorder_row(root)):  # rows 5 and 9 do not pass it either
        assert other.verdict == "FAIL" and "committed as a symbolic link" in other.reason, other
    outside.unlink()  # a machine without the target: the same message, not `git checkout`
    for other in (ids_only_row(root), results_row(root), reorder_row(root)):
        assert other.verdict == "FAIL" and "symbolic link" in other.reason, other
        assert "git checkout" not in other.reason and "rename" not in other.reason


def test_row_4_says_when_the_hub_files_are_not_in_the_lock() -> None:
    row = datasets_row(REPO_ROOT)
    lock = json.loads((REPO_ROOT / "datasets.lock").read_text())
    if any(e.get("base") == "hub" for e in lock["entries"].values()):
        pytest.skip("the hub snapshots are locked in this checkout")
    assert row.verdict == "OK"
    assert "the hub snapshots are not yet in datasets.lock at all (runbook step 2" in row.reason
