"""Time and memory of `bench rehearse`: a first run with empty caches, then a repeated run with caches.

Targets (issues 10, 11 and 15, with the latency, int8, costs and judged steps): first run < 15 min on 2 cores,
repeated run < 6 min, peak memory < 4 GB. Peak memory is
the largest sum of the resident set sizes of the rehearsal process and all its descendants (the Typesense
server included), sampled every 0.2 s with psutil. The load average is printed with the figures, because a
busy machine (other jobs on the same cores) slows every step.

    uv run python benchmarks/bench_rehearse.py [--max-queries N] [--keep DIR]
"""

from __future__ import annotations

import argparse
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
TARGETS = {"first": 15 * 60.0, "repeated": 6 * 60.0}
PEAK_TARGET = 4 * 1024**3


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def run_once(out: Path, cache: Path, extra: list[str]) -> tuple[float, int, str, int]:
    """(seconds, peak RSS of the process tree, stdout, exit code) of one rehearsal."""
    env = {**os.environ, "BENCH_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-m", "bench.cli", "rehearse", "--out", str(out), *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    ps = psutil.Process(proc.pid)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                peak[0] = max(peak[0], _tree_rss(ps))
            except psutil.NoSuchProcess:
                return
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, _ = proc.communicate()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    return seconds, peak[0], stdout, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-queries", type=int, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="keep the rehearsal directories here")
    args = ap.parse_args()
    extra = ["--max-queries", str(args.max_queries)] if args.max_queries else []
    base = Path(tempfile.mkdtemp(prefix="bench-rehearse-"))
    keep = args.keep or base
    cache = base / "cache"  # empty for the first run, warm for the second
    print(f"cpus: {os.cpu_count()} (affinity {len(os.sched_getaffinity(0))}), load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    results = {}
    for name in ("first", "repeated"):
        seconds, peak, stdout, code = run_once(keep / name, cache, extra)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        ok = code == 0 and seconds < TARGETS[name] and peak < PEAK_TARGET
        results[name] = (seconds, peak, code)
        what = "empty caches" if name == "first" else "with caches"
        print(f"{name} run ({what}): {seconds / 60:.1f} min (target < {TARGETS[name] / 60:.0f} min), "
              f"peak RSS of the process tree {peak / 1024**3:.2f} GB (target < 4 GB), exit {code}, "
              f"load average after: {load} -> {'OK' if ok else 'MISSED'}")  # fmt: skip
        if name == "repeated" or code != 0:
            print("\n--- what the rehearsal printed ---\n" + stdout)
    if args.keep is None:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if all(c == 0 for _, _, c in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
