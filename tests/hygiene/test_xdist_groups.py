"""The suite's share-out between pytest-xdist workers (tests/support/xdist_groups.py): a module's tests run
on one worker, the shared rehearsal's files are one unit, and the declared lists name real files."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.support.xdist_groups import FIRST, ONE_WORKER_FOLDERS, REHEARSAL, REHEARSAL_FILES, scope_of

ROOT = Path(__file__).resolve().parents[2]
# two light modules (3 and 20 tests; xdist without the scheduler spreads them over both workers): the
# inner session costs three pytest start-ups and little else
FILES = ("tests/test_clock.py", "tests/test_retry_after.py")


def test_scope_of_node_ids() -> None:
    assert scope_of("tests/rehearse/test_quiet.py::test_x") == REHEARSAL
    assert scope_of("tests/rehearse/test_signals.py::test_y[a::b]") == REHEARSAL
    assert scope_of("tests/audit/test_audit.py::test_z") == "tests/audit"
    assert scope_of("tests/analysis/test_a.py::test_b[x@y]") == "tests/analysis/test_a.py"
    assert scope_of("tests/analysis/test_a.py::Class::test_b") == "tests/analysis/test_a.py"


def test_each_module_runs_on_one_worker(tmp_path: Path) -> None:
    """Two real modules under ``-n 2 --dist loadgroup``: each file's tests all on one worker (with pytest 9.2
    and xdist's own loadgroup they were spread over both)."""
    inner = str(tmp_path / "inner")  # its own temporary folders, apart from this session's
    args = ["-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider", "--basetemp", inner]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args, *FILES], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, path in re.findall(r"\[(gw\d+)\].*PASSED (\S+?)::", done.stdout):
        workers[path].add(worker)
    assert sorted(workers) == sorted(FILES), done.stdout[-3000:]
    assert all(len(w) == 1 for w in workers.values()), dict(workers)


def test_declared_files_and_units_exist() -> None:
    for path in REHEARSAL_FILES:
        text = (ROOT / path).read_text(encoding="utf-8")
        assert "rehearsal: Rehearsal" in text, f"{path} is in REHEARSAL_FILES but does not use the fixture"
    for folder in ONE_WORKER_FOLDERS:
        assert (ROOT / folder).is_dir(), folder
    scopes = {scope_of(p.relative_to(ROOT).as_posix() + "::t") for p in (ROOT / "tests").rglob("test_*.py")}
    assert set(FIRST) <= scopes, set(FIRST) - scopes
