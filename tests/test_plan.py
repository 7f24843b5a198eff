"""PLAN.md is the first commit, alone, and never changes (plan preamble).

The check reads git directly (not through bench) so that it stays independent of the code it guards.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

PLAN = "PLAN.md"


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=True).stdout


def plan_problems(root: Path) -> list[str]:
    """Every way in which ``root``'s history breaks the plan's promise (empty list: none)."""
    problems: list[str] = []
    roots = _git(root, "rev-list", "--max-parents=0", "HEAD").decode().split()
    if len(roots) != 1:
        return [f"expected one root commit, found {len(roots)}"]
    first = roots[0]
    files = _git(root, "ls-tree", "-r", "--name-only", "-z", first).decode().split("\0")[:-1]
    if files != [PLAN]:
        problems.append(f"first commit {first[:7]} holds {files}, not only {PLAN}")
    if PLAN not in files:
        return problems
    original = _git(root, "show", f"{first}:{PLAN}")
    head = _git(root, "show", f"HEAD:{PLAN}") if PLAN in _ls_head(root) else None
    if head != original:
        problems.append(f"{PLAN} on HEAD differs from the blob of the first commit {first[:7]}")
    worktree = root / PLAN
    if worktree.exists() and worktree.read_bytes() != original:
        problems.append(f"{PLAN} in the working tree differs from the first commit")
    problems += _changed_in_some_commit(root, first)
    title = original.decode("utf-8").splitlines()[0].removeprefix("# ").strip()
    subject = _git(root, "log", "-1", "--format=%s", first).decode().strip()
    if subject != title:
        problems.append(f"first commit message {subject!r} is not the plan's title {title!r}")
    return problems


def _changed_in_some_commit(root: Path, first: str) -> list[str]:
    """Every commit of the history (merges and both of their sides: ``git rev-list`` walks all parents) must
    hold the first commit's PLAN.md blob; a change that was later reverted still fails."""
    commits = _git(root, "rev-list", "--topo-order", "--reverse", "HEAD").decode().split()
    query = "".join(f"{c}:{PLAN}\n" for c in commits).encode()
    out = (
        subprocess.run(
            ["git", "-C", str(root), "cat-file", "--batch-check=%(objectname)"],
            input=query,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .splitlines()
    )
    blob = _git(root, "rev-parse", f"{first}:{PLAN}").decode().strip()
    for commit, line in zip(commits, out, strict=True):
        if line != blob:
            return [f"commit {commit[:7]} holds a {PLAN} that is not the first commit's"]
    return []


def _ls_head(root: Path) -> list[str]:
    return _git(root, "ls-tree", "-r", "--name-only", "-z", "HEAD").decode().split("\0")[:-1]


def test_repository_plan_is_first_commit_alone_and_unchanged(repo_root: Path) -> None:
    assert plan_problems(repo_root) == []


def test_first_commit_blob_is_the_plan_we_read(repo_root: Path) -> None:
    first = _git(repo_root, "rev-list", "--max-parents=0", "HEAD").decode().split()[0]
    blob = _git(repo_root, "rev-parse", f"{first}:{PLAN}").decode().strip()
    head_blob = _git(repo_root, "rev-parse", f"HEAD:{PLAN}").decode().strip()
    assert blob == head_blob
    assert len(blob) == 40


TITLE = "# A plan\n\nbody\n"


def test_clean_history_passes(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([{PLAN: TITLE}, {"other.txt": "x"}], messages=["A plan", "more"])
    assert plan_problems(root) == []


def test_extra_file_in_first_commit_fails(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([{PLAN: TITLE, "README.md": "hi"}], messages=["A plan"])
    assert plan_problems(root) == [
        "first commit " + _first(root)[:7] + " holds ['PLAN.md', 'README.md'], not only PLAN.md"
    ]


def test_changed_plan_on_head_fails(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([{PLAN: TITLE}, {PLAN: TITLE + "one more line\n"}], messages=["A plan", "edit"])
    problems = plan_problems(root)
    assert any("on HEAD differs" in p for p in problems)
    assert any("working tree differs" in p for p in problems)


def test_deleted_plan_fails(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([{PLAN: TITLE}, {PLAN: None, "x": "y"}], messages=["A plan", "rm"])
    assert any("on HEAD differs" in p for p in plan_problems(root))


def test_plan_not_in_first_commit_fails(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([{"README.md": "hi"}, {PLAN: TITLE}], messages=["start", "A plan"])
    assert plan_problems(root) == [
        "first commit " + _first(root)[:7] + " holds ['README.md'], not only PLAN.md"
    ]


def test_wrong_first_commit_message_fails(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([{PLAN: TITLE}], messages=["initial commit"])
    assert plan_problems(root) == ["first commit message 'initial commit' is not the plan's title 'A plan'"]


def _first(root: Path) -> str:
    return _git(root, "rev-list", "--max-parents=0", "HEAD").decode().split()[0]


def test_a_reverted_plan_change_fails(tmp_git_repo: Callable[..., Path]) -> None:
    """Change the plan, commit, `git revert`: HEAD is identical again, the history is not."""
    root = tmp_git_repo([{PLAN: TITLE}, {PLAN: TITLE + "x\n"}, {PLAN: TITLE}], messages=["A plan", "e", "r"])
    changed = _git(root, "rev-parse", "HEAD~1").decode().strip()
    assert plan_problems(root) == [f"commit {changed[:7]} holds a PLAN.md that is not the first commit's"]


def test_a_plan_change_inside_a_merge_fails(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([{PLAN: TITLE}, {"a": "1"}], messages=["A plan", "a"])
    _git(root, "checkout", "-q", "-b", "side", "HEAD~1")
    (root / "b").write_text("2")
    _git(root, "add", "b")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "b")
    _git(root, "checkout", "-q", "main")
    _git(root, "merge", "--no-ff", "--no-commit", "side")
    (root / PLAN).write_text(TITLE + "merged\n")
    _git(root, "add", PLAN)
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "merge")
    merge = _git(root, "rev-parse", "HEAD").decode().strip()
    (root / PLAN).write_text(TITLE)
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "restore")
    assert plan_problems(root) == [f"commit {merge[:7]} holds a PLAN.md that is not the first commit's"]
