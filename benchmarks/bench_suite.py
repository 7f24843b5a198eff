"""The README's pytest command, measured: where the suite's time goes, on demand.

``uv run python benchmarks/bench_suite.py [--json OUT] [--top N] [-- PYTEST ARGS]`` runs ``pytest -q`` (the
README's command; two xdist workers from pyproject's addopts) in this checkout with the ``suite_timeline``
plugin and prints:

- the wall seconds, pytest's exit status, and the machine's busy CPU seconds and idle core seconds over the
  run (``/proc/stat``: every process, the tests' servers and grandchildren included; null with the reason
  where it cannot be read);
- the CPU seconds of the test processes and the children they reaped, per test folder and for the slowest
  tests (setup, call and teardown together; a server stopped by a session fixture counts in the teardown
  that reaps it);
- the CPU model, its flags, the load average before and after, the commit and whether the tree was dirty.

The suite is CPU-bound on a 2-core machine (wall about busy CPU / 2 plus idle / 2), so its CPU seconds are
the figure to compare between commits; wall seconds change with the host's speed (docs/performance.md).
The exit status is pytest's: a failing suite is not a measurement."""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guard import machine, provenance
from suite_timeline import ENV

from analysis.core.atomic import write_json_atomic

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
PLUGIN = "suite_timeline"  # loaded by pytest under this name (HERE on PYTHONPATH); it reads ENV
STAT = Path("/proc/stat")


@dataclass(frozen=True)
class Phase:
    """One line of the plugin's timeline: a test's setup, call or teardown."""

    phase: str
    nodeid: str
    start: float
    end: float
    cpu_s: float  # the test process's own CPU seconds plus those of the children it reaped

    @property
    def folder(self) -> str:
        """``tests/<folder>`` of the test's file; ``tests/(top)`` for a file directly in ``tests/``."""
        parts = self.nodeid.split("::")[0].split("/")
        return "/".join(parts[:2]) if len(parts) > 2 else f"{parts[0]}/(top)"


def read_timeline(folder: Path) -> list[Phase]:
    """Every phase the plugin wrote under ``folder``; a malformed line is refused with its file and line."""
    phases: list[Phase] = []
    for path in sorted(folder.glob("*.tsv")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            fields = line.split("\t")
            try:
                phase, nodeid, start, end, own, reaped = fields
                phases.append(Phase(phase, nodeid, float(start), float(end), float(own) + float(reaped)))
            except ValueError:
                raise SystemExit(
                    f"{path}:{n}: not a timeline line (6 tab-separated fields, the last four numbers): "
                    f"{line[:120]!r}; was it written by another version of {PLUGIN}.py?"
                ) from None
    return phases


def proc_stat(path: Path = STAT) -> list[int] | None:
    """The machine's CPU time counters (the ``cpu`` line of ``/proc/stat``, in clock ticks); None where the
    file cannot be read (not Linux)."""
    try:
        first = path.read_text(encoding="ascii").splitlines()[0].split()
        return [int(x) for x in first[1:]] if first and first[0] == "cpu" else None
    except (OSError, IndexError, UnicodeDecodeError, ValueError):
        return None


def machine_seconds(before: list[int] | None, after: list[int] | None, ticks: int) -> dict[str, Any]:
    """Busy CPU seconds (user, nice, system, irq, softirq, steal) and idle core seconds (idle, iowait) between
    two ``proc_stat`` readings; each null with the reason where a reading is missing."""
    if before is None or after is None:
        reason = f"{STAT} could not be read (not Linux?)"
        return {"busy_cpu_s": None, "idle_core_s": None, "reason": reason}
    d = [b - a for a, b in zip(before, after, strict=False)] + [0] * 8
    busy = d[0] + d[1] + d[2] + d[5] + d[6] + d[7]
    return {"busy_cpu_s": round(busy / ticks, 2), "idle_core_s": round((d[3] + d[4]) / ticks, 2)}


def summarise(phases: Sequence[Phase], top: int) -> dict[str, Any]:
    """The test processes' CPU seconds in all, per folder (largest first) and for the ``top`` tests with the
    most (setup, call and teardown together), and the number of tests that ran a phase."""
    per_test: collections.Counter[str] = collections.Counter()
    wall: collections.Counter[str] = collections.Counter()
    per_folder: collections.Counter[str] = collections.Counter()
    for p in phases:
        per_test[p.nodeid] += p.cpu_s
        wall[p.nodeid] += p.end - p.start
        per_folder[p.folder] += p.cpu_s
    return {
        "tests": len(per_test),
        "tests_cpu_s": round(sum(p.cpu_s for p in phases), 2),
        "per_folder_cpu_s": {k: round(v, 2) for k, v in per_folder.most_common()},
        "slowest": [
            {"test": k, "cpu_s": round(v, 2), "wall_s": round(wall[k], 2)}
            for k, v in per_test.most_common(top)
        ],
    }


def run_suite(pytest_args: Sequence[str], folder: Path) -> tuple[int, float]:
    """``pytest -q`` with the plugin, its output on this terminal; its exit status and wall seconds."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *filter(None, [env.get("PYTHONPATH")])])
    env[ENV] = str(folder)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", PLUGIN, *pytest_args]
    t0 = time.perf_counter()
    rc = subprocess.call(cmd, cwd=REPO, env=env)
    return rc, time.perf_counter() - t0


def measure(pytest_args: Sequence[str], top: int) -> dict[str, Any]:
    """Run the suite once and gather every figure of the module docstring (the machine and the commit as the
    speed guard records them: ``guard.machine``, ``guard.provenance``)."""
    load_start = os.getloadavg()
    before = proc_stat()
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        rc, wall = run_suite(pytest_args, Path(tmp))
        after = proc_stat()
        phases = read_timeline(Path(tmp))
    return {
        **provenance(),
        "command": ["pytest", "-q", *pytest_args],
        "exit_status": rc,
        "wall_s": round(wall, 2),
        "machine": machine(load_start),
        **machine_seconds(before, after, os.sysconf("SC_CLK_TCK")),
        **summarise(phases, top),
    }


def printed(fig: dict[str, Any]) -> str:
    """The figures as the terminal shows them."""
    m = fig["machine"]
    flags = ", ".join(f for f, on in (m["flags"] or {}).items() if on) or "none of the int8 ones"
    busy = fig["busy_cpu_s"]
    lines = [
        f"pytest {' '.join(fig['command'][2:]) or '(no arguments)'}: exit {fig['exit_status']}, "
        f"{fig['wall_s']:.1f} s wall, {fig['tests']} tests timed",
        f"machine: {busy} busy CPU-s, {fig['idle_core_s']} idle core-s"
        if busy is not None
        else f"machine: not measured ({fig['reason']})",
        f"test processes and their reaped children: {fig['tests_cpu_s']:.1f} CPU-s; per folder:",
        *(f"  {v:8.1f}  {k}" for k, v in fig["per_folder_cpu_s"].items()),
        "slowest tests (CPU-s, wall s):",
        *(f"  {t['cpu_s']:8.1f} {t['wall_s']:8.1f}  {t['test']}" for t in fig["slowest"]),
        f"CPU {m['cpu_model']} x {m['cpus']}, flags: {flags}; load average {m['load_start']} at the start, "
        f"{m['load_end']} at the end; commit {fig['commit']}{' (dirty)' if fig['dirty'] else ''}",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--top", type=int, default=15, help="how many of the slowest tests to list")
    parser.add_argument("pytest_args", nargs="*", help="after --: more arguments for pytest")
    args = parser.parse_args(argv)
    if args.top < 0:
        parser.error(f"--top {args.top}: give 0 or more")
    try:
        fig = measure(args.pytest_args, args.top)
    except KeyboardInterrupt:
        print("bench_suite: interrupted; nothing measured, nothing written", file=sys.stderr)
        return 130
    print(printed(fig))
    if args.json is not None:
        write_json_atomic(args.json, fig)
    return int(fig["exit_status"])


if __name__ == "__main__":
    sys.exit(main())
