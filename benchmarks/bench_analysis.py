"""Speed of `analysis report` on a full-size study; run on demand, not in CI.

    uv run python benchmarks/bench_analysis.py [--ranx-pairs 45] [--keep DIR]

Generates 4 stages x 9 models x 3 depths x 305 queries (the real MIRACL-de dev qrels, synthetic scores) in a
temporary folder, laid out as bench writes it (every depth-k run holds all 100 candidates: the reranked top k,
then the first stage's tail with placeholder scores), and prints, in this process after imports:
  * reading + scoring all 112 run files,
  * the statistics (bootstrap intervals for nDCG@10 and Hit@5 of every run, 10,000 resamples; the paired
    sign-flip test for every comparison, 10,000 sign flips; Holm; wording) - target < 1 s on 2 cores,
  * the whole report with figures (write_report) - target < 3 s,
  * peak memory (max RSS of this process), and a cold `analysis report` subprocess for reference,
  * the load row side by side with its anchor: the whole report in ONE process with the columnar reader
    (target < 1.5 s), the same with the line-by-line reference reader (the former reader), and the
    statistics alone (the anchor); the JSON of both readers is compared byte for byte.
Then it times ranx's Fisher randomisation test (10,000 permutations) on the same comparisons and prints the
ratio. ranx is in the optional dependency group `benchmarks`: install it with
`uv sync --group benchmarks` (or `uv pip install ranx==0.3.21`); without it that part is skipped with this
message. ranx is timed on a subset of the comparisons (``--ranx-pairs``) and extrapolated per comparison.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from analysis.core.plan import MAIN_METRIC, RANDOMISATION_RESAMPLES, SEED
from analysis.inputs.trec import read_qrels
from analysis.reporting.report import write_report
from analysis.reporting.study import analyse_stages, load_stages
from analysis.simulation.synthetic import write_study
from analysis.stats.metrics import Judgments
from analysis.stats.resampling import (
    bootstrap_indices,
    paired_differences,
    randomisation_p_values,
    sign_matrix,
)

REPO = Path(__file__).resolve().parents[1]
QRELS = REPO / "data" / "bundled" / "miracl-de-dev" / "qrels.miracl-v1.0-de-dev.tsv"
STAGES = ("keyword-71k", "vector-71k", "hybrid-71k", "keyword-full")
MODELS = (
    "gte-base",
    "bge-v2-m3",
    "jina-v3.5",
    "qwen3-0.6b",
    "mxbai-large-v2",
    "qwen3-4b",
    "querit-4b",
    "voyage-rerank-3",
    "voyage-rerank-3-lite",
)


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the reader's worker processes)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _timed(label: str, func, repeat: int = 1):  # type: ignore[no-untyped-def]
    """Best wall time of ``repeat`` calls; the CPU time of this process is printed too, because on a shared
    machine the wall time mostly measures the other processes."""
    times, cpus = [], []
    result = None
    for _ in range(repeat):
        t, c = time.perf_counter(), _cpu()
        result = func()
        times.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
    print(f"{label:<52} wall {min(times):7.3f} s  cpu {min(cpus):7.3f} s  (best of {repeat})")
    return result, min(times)


def make_study(runs: Path) -> list[Path]:
    """The full-size synthetic study (4 stages x 9 models x 3 depths, real dev qrels) under ``runs``; its
    run files. Also used by ``guard.py``."""
    qrels = read_qrels(QRELS)
    rng = np.random.default_rng(5)
    signals = {m: float(s) for m, s in zip(MODELS, rng.uniform(1.0, 2.5, len(MODELS)), strict=True)}
    write_study(runs, qrels, stages=STAGES, models=signals, depths=(20, 50, 100), tails=True)
    return sorted(runs.rglob("*.trec"))


def cold_report(
    runs: Path, out: Path, env: dict[str, str], extra: tuple[str, ...] = ()
) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (all processes) and exit code of one cold `analysis report` subprocess,
    imports included; ``extra``: more options (``--no-figures``, ``--prices ...``). Also used by
    ``guard.py``."""
    t, c = time.perf_counter(), _cpu()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "analysis.cli",
            "report",
            "--runs",
            str(runs),
            "--qrels",
            str(QRELS),
            "--out",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    return time.perf_counter() - t, _cpu() - c, proc.returncode  # all descendants have been waited for


def _issue15_row(runs: Path, tmp: Path, t_stats: float, repeat: int, mib: float, n_files: int) -> None:
    """The report in one process: columnar reader (now) against the reference reader (before), with the
    statistics alone as the anchor; both outputs must be byte-identical."""
    os.environ["ANALYSIS_WORKERS"] = "1"
    timings, cpus = {}, {}
    for reader in ("reference", "fast"):
        os.environ["ANALYSIS_TREC_READER"] = reader
        load = os.getloadavg()[0]
        label = f"whole report with figures, ONE process, {reader} reader (load {load:.1f})"
        out = tmp / f"out-{reader}"
        c = _cpu()
        _, timings[reader] = _timed(label, lambda o=out: write_report(runs, QRELS, o), repeat)
        cpus[reader] = (_cpu() - c) / repeat
    del os.environ["ANALYSIS_TREC_READER"]
    same = all(
        (tmp / "out-fast" / "quality" / p.name).read_bytes() == p.read_bytes()
        for p in (tmp / "out-reference" / "quality").iterdir()
    )
    fast, before = timings["fast"], timings["reference"]
    print(
        "row 2, the whole report (load average now "
        f"{os.getloadavg()[0]:.1f}; on a busy machine wall time mostly measures the other processes):"
    )
    print("| work | measured now | before (reference reader) | anchor, same run | target |")
    print("|---|---|---|---|---|")
    print(
        f"| `analysis report`, {n_files} run files, {mib:.0f} MiB | {fast:.2f} s wall, "
        f"{cpus['fast']:.2f} s cpu, one process ({before / fast:.1f}x faster) | {before:.2f} s wall, "
        f"{cpus['reference']:.2f} s cpu | "
        f"statistics alone {t_stats:.2f} s | < 1.5 s: {'met' if fast < 1.5 else 'NOT met'} |"
    )
    print(f"report JSON of both readers byte-identical: {same}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranx-pairs", type=int, default=45, help="comparisons timed with ranx (0: skip)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="write the study here and keep it")
    args = ap.parse_args()
    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, cpus {os.cpu_count()}, "
        f"affinity {len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.1f}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="bench-analysis-")) if args.keep is None else args.keep
    try:
        qrels = read_qrels(QRELS)
        runs = tmp / "runs"
        _timed("generate the study (not part of the targets)", lambda: make_study(runs))
        files = sorted(runs.rglob("*.trec"))
        print(f"study: {len(files)} run files, {sum(f.stat().st_size for f in files) / 2**20:.1f} MiB")

        judgments = Judgments.from_qrels(qrels)
        n = len(judgments.qids)
        workers = max(2, min(4, len(os.sched_getaffinity(0))))  # the optional reader processes
        os.environ["ANALYSIS_WORKERS"] = "1"
        _timed(
            "read + validate + score all runs, 1 process", lambda: load_stages(runs, judgments), args.repeat
        )
        os.environ["ANALYSIS_WORKERS"] = str(workers)
        stages, _ = _timed(
            f"read + validate + score all runs, {workers} processes (cpu: parent only)",
            lambda: load_stages(runs, judgments),
            args.repeat,
        )
        bootstrap_indices.cache_clear()
        sign_matrix.cache_clear()
        _timed("statistics, cold (draws the resample matrices)", lambda: analyse_stages(stages, n))
        _, t_stats = _timed("statistics, warm", lambda: analyse_stages(stages, n), args.repeat)
        pairs = [(c, f) for s in stages for f in s.families for c in f["comparisons"]]
        comparisons = len(pairs)
        print(f"comparisons: {comparisons}; intervals: {2 * sum(1 + len(s.runs) for s in stages)}")

        # the randomisation tests alone, for a like-for-like ratio with ranx
        by_key = {(s.stage, r.model, r.depth): r for s in stages for r in (s.first_stage, *s.runs)}
        arrays = []
        for c, f in pairs:
            stage = f["id"].split("/")[0]
            a = by_key[(stage, c["model"], c["depth"])].per_query[MAIN_METRIC]
            ref_model = None if c["reference"] == "first-stage" else c["reference"]
            b = by_key[(stage, ref_model, None if ref_model is None else c["depth"])].per_query[MAIN_METRIC]
            arrays.append((a, b))
        diffs = np.column_stack([paired_differences(a, b) for a, b in arrays])
        _, t_rand = _timed(
            "randomisation tests alone (all comparisons)", lambda: randomisation_p_values(diffs), args.repeat
        )

        out = tmp / "out"
        os.environ["ANALYSIS_WORKERS"] = "1"
        _timed("whole report with figures, 1 process", lambda: write_report(runs, QRELS, out), args.repeat)
        os.environ["ANALYSIS_WORKERS"] = str(workers)
        _, t_report = _timed(
            f"whole report with figures, {workers} processes (cpu: parent only)",
            lambda: write_report(runs, QRELS, out),
            args.repeat,
        )
        print(
            f"peak memory: max RSS of this process {_peak_mib():.0f} MiB (reader processes: see the "
            "cold run below)"
        )

        for n_workers in (1, workers):
            cold, cold_cpu, code = cold_report(
                runs, tmp / "out-cold", {**os.environ, "ANALYSIS_WORKERS": str(n_workers)}
            )
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(
                f"cold `analysis report` subprocess, {n_workers} process(es), imports included: wall "
                f"{cold:.3f} s, cpu {cold_cpu:.3f} s (all processes), exit {code}; peak RSS of "
                f"any child so far {peak:.0f} MiB"
            )
        print(
            f"TARGETS: statistics {t_stats:.3f} s (< 1 s: {'met' if t_stats < 1 else 'NOT met'}); "
            f"report {t_report:.3f} s (< 3 s: {'met' if t_report < 3 else 'NOT met'})"
        )
        mib = sum(f.stat().st_size for f in files) / 2**20
        _issue15_row(runs, tmp, t_stats, args.repeat, mib, len(files))

        if args.ranx_pairs > 0:
            try:
                from ranx.statistical_tests import fisher_randomization_test
            except ModuleNotFoundError:
                print(
                    "ranx is not installed: run `uv sync --group benchmarks` (or "
                    "`uv pip install ranx==0.3.21`) to time its Fisher randomisation test"
                )
                return 0
            a0, b0 = arrays[0]
            _timed(
                "ranx: first call (numba compilation)",
                lambda: fisher_randomization_test(
                    a0, b0, n_permutations=RANDOMISATION_RESAMPLES, max_p=0.05, random_seed=SEED
                ),
            )
            subset = arrays[: args.ranx_pairs]

            def run_ranx() -> None:
                for a, b in subset:
                    fisher_randomization_test(
                        a, b, n_permutations=RANDOMISATION_RESAMPLES, max_p=0.05, random_seed=SEED
                    )

            _, t_ranx = _timed(f"ranx Fisher test, {len(subset)} comparisons, warm", run_ranx)
            per = t_ranx / len(subset)
            total = per * comparisons
            print(
                f"ranx per comparison {per:.4f} s -> {comparisons} comparisons ~ {total:.1f} s (extrapolated)"
            )
            print(
                f"RATIO ranx / ours (randomisation tests only): {total / t_rand:.0f}x; "
                f"ranx / ours (all statistics incl. bootstrap): {total / t_stats:.0f}x"
            )
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
