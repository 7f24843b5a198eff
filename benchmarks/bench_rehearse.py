"""Time and memory of `bench rehearse`: a first run with empty caches, then a repeated run with caches.

Budget (the rehearsal's time limit; the rehearsal's latency and int8 steps time 5
warm-up calls and 10 sampled queries per k): on the 2-core development machine, whichever CPU it has,
first run < 12 min, repeated run < 5 min, peak memory of the process tree < 4 GB, with nothing else running.
Peak memory is the largest sum of the resident set sizes of the rehearsal process and all its descendants
(the Typesense server and the quantising child included), sampled every 0.2 s with psutil. Printed with the
figures: the CPU model, its int8 instruction-set flags (int8 speed depends on them), the core count and the
load average before, during (mean of 1-minute samples) and after each run, because a busy machine (other
jobs on the same cores) slows every step; and each run's step times from its rehearsal.json.

    uv run python benchmarks/bench_rehearse.py [--max-queries N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"first": 12 * 60.0, "repeated": 5 * 60.0}  # the budget above
PEAK_TARGET = 4 * 1024**3


def cpu_line() -> str:
    """CPU model and its int8 flags as the int8 step records them
    (``bench.rerankers.openvino.manifest.cpu_flags``)."""
    sys.path.insert(0, str(ROOT))
    from bench.rerankers.openvino.manifest import cpu_flags

    cpu = cpu_flags()
    flags = cpu.get("flags") or {}
    have = ", ".join(f for f, on in flags.items() if on) or "none"
    lack = ", ".join(f for f, on in flags.items() if not on) or "none"
    return (
        f"cpu: {cpu.get('cpu_model')}; int8 flags present: {have}; absent: {lack}; "
        f"VNNI/AMX: {'yes' if cpu.get('vnni') else 'no'}"
    )


def step_times(out: Path) -> str:
    try:
        times = json.loads((out / "rehearsal.json").read_text(encoding="utf-8"))["times_s"]
    except (OSError, ValueError, KeyError):
        return "  (no rehearsal.json)"
    return "\n".join(f"  {name:<13} {sec:7.1f} s" for name, sec in times.items())


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def run_once(out: Path, cache: Path, extra: list[str]) -> tuple[float, int, str, int, float, str]:
    """(seconds, peak RSS of the process tree, stdout, exit code, mean 1-min load, where the peak was) of one
    rehearsal. Where: the last line the rehearsal had printed on stderr when the peak was sampled (its step
    and progress lines), so that a peak over the budget names the step to work on."""
    env = {**os.environ, "BENCH_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-m", "bench.cli", "rehearse", "--out", str(out), *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps = psutil.Process(proc.pid)
    peak = [0]
    last_line = ["(before the first line)"]
    peak_at = [last_line[0]]

    def read_stderr() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:  # progress lines end in \r; keep the last non-empty piece
            pieces = [x.strip() for x in raw.replace("\r", "\n").split("\n") if x.strip()]
            if pieces:
                last_line[0] = pieces[-1][:160]

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    loads: list[float] = []
    done = threading.Event()

    def sample() -> None:
        tick = 0
        while not done.is_set():
            if tick % 50 == 0:  # every 10 s
                loads.append(os.getloadavg()[0])
            tick += 1
            try:
                rss = _tree_rss(ps)
                if rss > peak[0]:
                    peak[0], peak_at[0] = rss, last_line[0]
            except psutil.NoSuchProcess:
                return
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert proc.stdout is not None
    stdout = proc.stdout.read()
    proc.wait()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    reader.join(timeout=5)
    mean_load = sum(loads) / len(loads) if loads else float("nan")
    return seconds, peak[0], stdout, proc.returncode, mean_load, peak_at[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-queries", type=int, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="keep the rehearsal directories here")
    args = ap.parse_args()
    extra = ["--max-queries", str(args.max_queries)] if args.max_queries else []
    base = Path(tempfile.mkdtemp(prefix="bench-rehearse-"))
    keep = args.keep or base
    cache = base / "cache"  # empty for the first run, warm for the second
    print(cpu_line())
    print(
        f"cpus: {os.cpu_count()} (affinity {len(os.sched_getaffinity(0))}), load average before: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    results = {}
    lines = []
    for name in ("first", "repeated"):
        seconds, peak, stdout, code, mean_load, peak_at = run_once(keep / name, cache, extra)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        ok = code == 0 and seconds < TARGETS[name] and peak < PEAK_TARGET
        results[name] = (seconds, peak, code)
        what = "empty caches" if name == "first" else "with caches"
        line = (
            f"{name} run ({what}): {seconds / 60:.1f} min (target < {TARGETS[name] / 60:.0f} min), "
            f"peak RSS of the process tree {peak / 1024**3:.2f} GB (target < 4 GB), exit {code}, "
            f"load average during {mean_load:.2f} (mean of 1-min samples), after: {load} -> "
            f"{'OK' if ok else 'MISSED'}"
        )
        lines.append(line)
        print(line)
        print(f"  peak sampled after the rehearsal printed: {peak_at}")
        print(step_times(keep / name))
        if name == "repeated" or code != 0:
            print("\n--- what the rehearsal printed ---\n" + stdout)
    print("\n--- budget ---")
    print(cpu_line())
    print("\n".join(lines))
    if args.keep is None:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if all(c == 0 for _, _, c in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
