"""``benchmarks/bench_suite.py``, the suite's on-demand measurement: its sums and folders against hand-made
timelines, the machine's seconds from /proc/stat counters, a malformed timeline named by file and line, and
two real runs of pytest through the script (one passing, one failing). Nothing here asserts a time."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scripts import ROOT, benchmark

benchmark("guard_compare")  # first: guard.py imports it by this name, and bench_suite.py imports guard
benchmark("guard")
benchmark("suite_timeline")  # bench_suite.py imports it by this name too
suite = benchmark("bench_suite")
SCRIPT = ROOT / "benchmarks" / "bench_suite.py"


def phase(nodeid: str, cpu: float, when: str = "call", wall: float = 1.0) -> object:
    return suite.Phase(when, nodeid, 100.0, 100.0 + wall, cpu)


def test_sums_per_folder_and_the_slowest_tests_by_hand() -> None:
    phases = [
        phase("tests/analysis/test_a.py::test_x", 1.5, "setup"),
        phase("tests/analysis/test_a.py::test_x", 2.0),
        phase("tests/analysis/costs/test_c.py::test_y", 0.25),
        phase("tests/test_top.py::test_z[1]", 3.0, wall=4.0),
        phase("tests/test_top.py::test_z[1]", 0.5, "teardown"),
    ]
    fig = suite.summarise(phases, top=2)
    assert fig["tests"] == 3
    assert fig["tests_cpu_s"] == 7.25
    # a nested folder counts in its top folder under tests/; a file directly in tests/ in "(top)"
    assert fig["per_folder_cpu_s"] == {"tests/(top)": 3.5, "tests/analysis": 3.75}
    assert list(fig["per_folder_cpu_s"]) == ["tests/analysis", "tests/(top)"]  # largest first
    assert fig["slowest"] == [
        {"test": "tests/analysis/test_a.py::test_x", "cpu_s": 3.5, "wall_s": 2.0},
        {"test": "tests/test_top.py::test_z[1]", "cpu_s": 3.5, "wall_s": 5.0},
    ]


def test_machine_seconds_from_the_counters_and_null_without_them() -> None:
    # user nice system idle iowait irq softirq steal, in ticks of 1/100 s:
    # busy 300 + 0 + 60 + 0 + 2 + 1, idle 150 + 10
    before = [1000, 10, 200, 5000, 40, 0, 7, 3]
    after = [1300, 10, 260, 5150, 50, 0, 9, 4]
    assert suite.machine_seconds(before, after, 100) == {"busy_cpu_s": 3.63, "idle_core_s": 1.6}
    missing = suite.machine_seconds(None, after, 100)
    assert missing["busy_cpu_s"] is None and missing["idle_core_s"] is None
    assert "/proc/stat" in missing["reason"]


def test_proc_stat_reads_the_cpu_line_and_refuses_anything_else(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n", encoding="ascii")
    assert suite.proc_stat(stat) == [1, 2, 3, 4, 5, 6, 7, 8, 0, 0]
    stat.write_text("intr 1 2\n", encoding="ascii")
    assert suite.proc_stat(stat) is None
    stat.write_text("cpu  1 2 x 4\n", encoding="ascii")
    assert suite.proc_stat(stat) is None
    assert suite.proc_stat(tmp_path / "absent") is None


def test_a_malformed_timeline_line_is_named_with_its_file_and_line(tmp_path: Path) -> None:
    good = "call\ttests/test_a.py::test_x\t1.0\t2.0\t0.5\t0.0"
    bad = "call\ttests/test_a.py::test_y\t1.0"
    (tmp_path / "gw0.tsv").write_text(f"{good}\n{good}\n{bad}\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"gw0\.tsv:3: not a timeline line"):
        suite.read_timeline(tmp_path)


def _run(tmp_path: Path, *pytest_args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    out = tmp_path / "suite.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--json", str(out), "--top", "2", "--", *pytest_args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc, json.loads(out.read_text(encoding="utf-8"))


def test_the_repositorys_own_configuration_is_timed_test_by_test(tmp_path: Path) -> None:
    target = ROOT / "tests" / "test_clock.py"
    tree = ast.parse(target.read_text(encoding="utf-8"))
    tests = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    assert "parametrize" not in target.read_text(encoding="utf-8")  # one node id per function
    proc, fig = _run(tmp_path, "tests/test_clock.py", "-n", "0")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert fig["exit_status"] == 0 and fig["tests"] == len(tests)
    assert list(fig["per_folder_cpu_s"]) == ["tests/(top)"]
    assert {t["test"].split("::")[-1] for t in fig["slowest"]} <= set(tests)
    assert f"{len(tests)} tests timed" in proc.stdout and "per folder:" in proc.stdout


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\n"
CASE = f"""import subprocess, sys


def test_burns():
    exec({BURN!r})


def test_a_child_burns():
    subprocess.run([sys.executable, "-c", {BURN!r}], check=True)


def test_fails():
    assert 1 == 2
"""


def test_cpu_of_a_test_and_of_its_child_counts_and_a_failure_is_the_exit_status(tmp_path: Path) -> None:
    case = tmp_path / "case"
    case.mkdir()
    (case / "test_case.py").write_text(CASE, encoding="utf-8")
    proc, fig = _run(tmp_path, str(case / "test_case.py"), "-p", "no:cacheprovider")
    assert proc.returncode == 1 and fig["exit_status"] == 1  # pytest's status: a failing suite
    assert fig["tests"] == 3
    cpu = {t["test"].split("::")[-1]: t["cpu_s"] for t in fig["slowest"]}
    # os.times() counts whole clock ticks (1/100 s): a phase's 0.3 s can read 0.29 (seen in 2 of 6 runs), so
    # each burner is owed 0.3 s less two ticks; a plugin that missed its own or a child's CPU reads about 0
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert cpu["test_burns"] >= 0.3 - 2 * tick and cpu["test_a_child_burns"] >= 0.3 - 2 * tick
    assert sum(fig["per_folder_cpu_s"].values()) == pytest.approx(fig["tests_cpu_s"], abs=0.011)
    assert fig["tests_cpu_s"] >= 0.6 - 4 * tick
    # the machine was at least as busy as the test processes were (both counted in clock ticks)
    assert fig["busy_cpu_s"] >= fig["tests_cpu_s"] - 0.05
    assert fig["wall_s"] >= max(t["wall_s"] for t in fig["slowest"])


def test_the_printout_says_what_was_not_measured() -> None:
    fig = {
        "command": ["pytest", "-q"],
        "exit_status": 0,
        "wall_s": 1.5,
        "commit": None,
        "dirty": None,
        "machine": {"cpu_model": None, "flags": None, "cpus": 2, "load_start": [0.1], "load_end": [0.2]},
        **suite.machine_seconds(None, None, 100),
        **suite.summarise([phase("tests/test_a.py::test_x", 0.5)], top=1),
    }
    text = suite.printed(fig)
    assert "machine: not measured (/proc/stat could not be read" in text
    assert "flags: none of the int8 ones" in text and "0.5  tests/(top)" in text
