"""The speed guard: the quick benchmarks in one command, each compared with its last
recorded figure. Run it before resolving an issue that touches ``analysis/`` or a hot path.

    uv run python benchmarks/guard.py            # measure, compare with benchmarks/recorded.json
    uv run python benchmarks/guard.py --record   # measure and record the figures as this CPU's new ones
    uv run python benchmarks/guard.py --markdown # the recorded figures as docs/performance.md's table

Figures (seconds, lower is faster), each beside an anchor measured in the same run, alternating A, B, A, B:

- ``report-json``: a cold ``analysis report --no-figures`` subprocess (the JSON and Markdown) on the
  full-size synthetic study (112 run files, ``bench_analysis.make_study``), bytecode on, after one warm-up
  run. Anchor: a cold subprocess that reads the same 112 files with pyarrow's CSV reader and sorts every
  file's scores with numpy.
- ``report-runbook``: the runbook's report command, cold (``--prices``, ``--latency``, ``--passage-tokens``,
  ``--ecb-file``: every section and every figure) on the full-size study with latency blocks and prices
  (``bench_costs.build``, 112 run files). Same anchor on its run files.
- ``lock``: ``sha256_file`` (``bench data verify``) on a 256 MiB file (``bench_lock_verify.measure``).
  Anchor: ``openssl dgst -sha256`` on the same file.
- ``import``: ``import_passages`` of 2,000 passages with 1024-dim vectors into the local Typesense 0.24.1
  (``bench_speed_import.via_importer``). Anchor: the same documents pre-serialised and posted raw
  (``bench_speed_import.raw_post``).
- ``harness``: median time of one ``RerankerCaller`` call on the do-nothing adapter
  (``bench_latency_harness.caller_ns``). Anchor: a fixed pure-Python call timed the same way.
- ``status``: median of 5 cold ``bench status --json`` (``bench_status.run_once``). Anchor: median of 5 cold
  ``python -c "import click"``.

The rules of the verdict (25 % on ratios, 50 % when a run was loaded; absolute times only on the same CPU
with both runs idle; exit 1 slower, 3 cannot tell, 0 otherwise): ``guard_compare.py``. Subprocesses run
without PYTHONDONTWRITEBYTECODE, ANALYSIS_WORKERS and ANALYSIS_TREC_READER, as a user's shell would.

``BENCH_GUARD_PLANT=report-json:2.0[,status:1.5]`` plants a slowdown: the figure's time is multiplied by the
factor; for the figures the guard times itself (reports, lock, status, plumbing) the extra time is slept
inside the timed region. ``--only plumbing`` runs only the guard's self-check figure (a fixed numpy workload
against itself, ratio 1 by construction) for the tests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from guard_compare import (
    EXIT_OK,
    Figure,
    compare,
    find_record,
    margin_for,
    markdown,
    merge,
    new_record,
    table,
)

from analysis.core.atomic import write_json_atomic
from bench.core.interrupt import EXIT_INTERRUPTED, interruptible
from bench.integrity import git
from bench.rerankers.openvino.manifest import cpu_flags

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "benchmarks" / "recorded.json"
DEFAULT = ("report-json", "report-runbook", "lock", "import", "harness", "status")
EXIT_USAGE = 2
LOCK_MB, IMPORT_DOCS, IMPORT_BATCH, HARNESS_CALLS, STATUS_RUNS = 256, 2_000, 1_000, 20_000, 5

ANCHOR_READ = (
    "import sys, pathlib, numpy as np, pyarrow.csv as pc\n"
    "opts = pc.ParseOptions(delimiter=' ')\n"
    "ro = pc.ReadOptions(autogenerate_column_names=True)\n"
    "n = 0\n"
    "for f in sorted(pathlib.Path(sys.argv[1]).rglob('*.trec')):\n"
    "    t = pc.read_csv(f, read_options=ro, parse_options=opts)\n"
    "    n += int(np.argsort(-t.column(4).to_numpy(), kind='stable')[0] >= 0)\n"
    "print(n)\n"
)


def plants(spec: str | None) -> dict[str, float]:
    """``report:2.0,status:1.5`` -> {"report": 2.0, "status": 1.5}."""
    out: dict[str, float] = {}
    for part in filter(None, (spec or "").split(",")):
        name, _, factor = part.partition(":")
        try:
            value = float(factor)
        except ValueError:
            value = 0.0
        if value <= 0:
            raise ValueError(
                f"BENCH_GUARD_PLANT: {part!r} is not NAME:FACTOR with FACTOR > 0 (e.g. report:2.0)"
            )
        out[name.strip()] = value
    return out


PLANT: dict[str, float] = {}


def planted(name: str, seconds: float, *, sleep: bool) -> float:
    factor = PLANT.get(name, 1.0)
    if sleep and factor > 1:
        time.sleep((factor - 1) * seconds)
    return seconds * factor


def clean_env() -> dict[str, str]:
    drop = {"PYTHONDONTWRITEBYTECODE", "ANALYSIS_WORKERS", "ANALYSIS_TREC_READER"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def timed(name: str, fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return planted(name, time.perf_counter() - t, sleep=True)


def _report_figure(
    name: str, repeat: int, runs: Path, out: Path, extra: tuple[str, ...], what: str
) -> Figure:
    """Best of ``repeat`` cold ``analysis report`` runs on ``runs`` with ``extra`` options, each beside the
    anchor read of the same files, after one warm-up round (page cache, .pyc files)."""
    import bench_analysis

    env = clean_env()
    n_files = len(list(runs.rglob("*.trec")))

    def anchor() -> None:
        subprocess.run(
            [sys.executable, "-c", ANCHOR_READ, str(runs)], env=env, check=True, capture_output=True
        )

    reports: list[tuple[float, float]] = []
    anchors: list[float] = []
    for i in range(repeat + 1):  # the first round is the warm-up
        t = time.perf_counter()
        anchor()
        anchor_s = time.perf_counter() - t
        wall, cpu, code = bench_analysis.cold_report(runs, out, env, extra)
        if code != 0:
            return Figure(name, None, reason=f"`analysis report` exited {code}")
        if i:
            anchors.append(anchor_s)
            reports.append((planted(name, wall, sleep=True), cpu))
    best = min(reports)
    return Figure(name, best[0], min(anchors), best[1], what=f"{what}, {n_files} run files, best of {repeat}")


def fig_report_json(repeat: int) -> Figure:
    import bench_analysis

    with tempfile.TemporaryDirectory(prefix="guard-report-") as tmp:
        runs = Path(tmp) / "runs"
        bench_analysis.make_study(runs)
        return _report_figure(
            "report-json",
            repeat,
            runs,
            Path(tmp) / "out",
            ("--no-figures",),
            "cold `analysis report --no-figures`",
        )


def fig_report_runbook(repeat: int) -> Figure:
    import bench_costs

    from analysis.costs.ecb import default_ecb_file

    with tempfile.TemporaryDirectory(prefix="guard-runbook-") as tmp:
        root = Path(tmp)
        runs, latency = bench_costs.build(root)
        tokens = {s: {"mean_tokens": 150.0} for s in bench_costs.STAGES}  # a benchmark input
        (root / "tokens.json").write_text(
            json.dumps({"format": "passage-tokens/1", "tokenizer": "benchmark input", "stages": tokens}),
            encoding="utf-8",
        )
        extra = (
            *("--prices", str(root / "prices.toml"), "--latency", str(latency)),
            *("--passage-tokens", str(root / "tokens.json"), "--ecb-file", str(default_ecb_file())),
            "--allow-missing",  # the benchmark's prices file has no LLM prices
        )
        return _report_figure(
            "report-runbook",
            repeat,
            runs,
            root / "out",
            extra,
            "cold runbook `analysis report`, every figure",
        )


def fig_lock(repeat: int) -> Figure:
    import bench_lock_verify

    _, rows = bench_lock_verify.measure(LOCK_MB, max(3, repeat))
    if len(rows) < 2:
        return Figure("lock", None, reason="openssl not found (the anchor)")
    if rows[0][2] != rows[1][2]:
        return Figure("lock", None, reason="sha256 digests of ours and openssl's differ")
    return Figure(
        "lock",
        planted("lock", rows[0][1], sleep=True),
        rows[1][1],
        what=f"sha256_file of {LOCK_MB} MiB, page cache warm",
    )


def fig_import(repeat: int) -> Figure:
    import bench_speed_import as si
    from bench_import_common import passages, vectors

    from bench.core.plan import EMBEDDING_DIMS
    from bench.firststage.server import local_typesense

    docs = list(passages(IMPORT_DOCS))
    vecs = vectors(len(docs), EMBEDDING_DIMS)
    raw: list[float] = []
    ours: list[float] = []
    with local_typesense() as server:
        for r in range(repeat):
            raw.append(len(docs) / si.raw_post(server, docs, vecs, IMPORT_BATCH, f"guard-raw-{r}"))
            ours.append(
                len(docs) / si.via_importer(server, docs, vecs, IMPORT_BATCH, f"guard-ours-{r}", former=False)
            )
    return Figure(
        "import",
        planted("import", min(ours), sleep=False),
        min(raw),
        what=f"import_passages, {IMPORT_DOCS} docs, 1024-dim, batch {IMPORT_BATCH}",
    )


def _anchor_call(k: int) -> tuple[dict[str, Any], int]:
    t0 = time.perf_counter_ns()
    scores = [0.0] * k
    record = {"query": "q", "k": k, "scores": scores, "docids": tuple(f"d{i}" for i in range(k))}
    return record, time.perf_counter_ns() - t0


def _anchor_ns(n: int, k: int) -> list[int]:
    for _ in range(1000):
        _anchor_call(k)
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        _anchor_call(k)
        out.append(time.perf_counter_ns() - t0)
    return out


def fig_harness(repeat: int) -> Figure:
    import bench_latency_harness as lh

    ours, anchor = [], []
    for _ in range(repeat):
        ours.append(statistics.median(lh.caller_ns(HARNESS_CALLS, 20)[0]) / 1e9)
        anchor.append(statistics.median(_anchor_ns(HARNESS_CALLS, 20)) / 1e9)
    return Figure(
        "harness",
        planted("harness", min(ours), sleep=False),
        min(anchor),
        what=f"RerankerCaller per call, do-nothing adapter, median of {HARNESS_CALLS:,}",
    )


def fig_status(repeat: int) -> Figure:
    import bench_status

    env = clean_env()
    bench_status.run_once(env)  # warm-up: .pyc files

    def anchor() -> None:
        subprocess.run([sys.executable, "-c", "import click"], env=env, check=True)

    ours, anchors = [], []
    for _ in range(STATUS_RUNS):
        anchors.append(timed("anchor", anchor))
        seconds, heavy = bench_status.run_once(env)
        if heavy != "[]":
            return Figure("status", None, reason=f"`bench status` imported heavy modules {heavy}")
        ours.append(planted("status", seconds, sleep=True))
    return Figure(
        "status",
        statistics.median(ours),
        statistics.median(anchors),
        what=f"cold `bench status --json`, median of {STATUS_RUNS}",
    )


def _numpy_work() -> None:
    import numpy as np

    a = np.random.default_rng(1).standard_normal((200, 200))
    for _ in range(4):
        a = np.tanh(a @ a / 200)


def fig_plumbing(repeat: int) -> Figure:
    ours, anchor = [], []
    for _ in range(max(3, repeat)):
        anchor.append(timed("anchor", _numpy_work))
        ours.append(timed("plumbing", _numpy_work))
    return Figure(
        "plumbing", min(ours), min(anchor), what="the guard's self-check: a workload against itself"
    )


FIGURES: dict[str, Callable[[int], Figure]] = {
    "report-json": fig_report_json,
    "report-runbook": fig_report_runbook,
    "lock": fig_lock,
    "import": fig_import,
    "harness": fig_harness,
    "status": fig_status,
    "plumbing": fig_plumbing,
}


def all_flags_sha256(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """sha256 of the first CPU's sorted flags: two CPUs sold under one model name can differ in them."""
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "flags":
                return hashlib.sha256(" ".join(sorted(value.split())).encode()).hexdigest()
    except OSError:
        return None
    return None


def machine(load_start: tuple[float, float, float]) -> dict[str, Any]:
    cpu = cpu_flags()
    return {
        "cpu_model": cpu["cpu_model"],
        "flags": cpu["flags"],
        "flags_sha256": all_flags_sha256(),
        "cpus": os.cpu_count(),
        "load_start": [round(x, 2) for x in load_start],
        "load_end": [round(x, 2) for x in os.getloadavg()],
    }


def provenance() -> dict[str, Any]:
    commit = git.head_commit(REPO)
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit,
        "dirty": bool(git.dirty_paths(REPO)) if commit else None,
    }


def read_recorded(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"records": []}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("records"), list):
            raise ValueError("no list 'records'")
        for r in data["records"]:
            if not isinstance(r.get("machine"), dict) or not isinstance(r.get("figures"), dict):
                raise ValueError("a record without 'machine' or 'figures'")
    except (ValueError, AttributeError) as err:
        raise SystemExit(
            f"{path}: not a recorded-figures file ({err}); restore it with `git checkout "
            f"{path.name}` or delete it and run with --record"
        ) from err
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", action="store_true", help="write these figures as this CPU's recorded ones")
    ap.add_argument("--force", action="store_true", help="with --record: replace idle figures by loaded ones")
    ap.add_argument(
        "--only", default=",".join(DEFAULT), help=f"figures, comma-separated (of {', '.join(FIGURES)})"
    )
    ap.add_argument("--repeat", type=int, default=2, help="rounds per figure (best counts)")
    ap.add_argument("--recorded", type=Path, default=RECORDED)
    ap.add_argument(
        "--markdown",
        action="store_true",
        help="print the recorded figures as docs/performance.md's table; measure nothing",
    )
    args = ap.parse_args(argv)
    if args.markdown:
        print(markdown(read_recorded(args.recorded)["records"]))
        return EXIT_OK
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in FIGURES]
    if unknown or args.repeat < 1:
        print(
            f"--only: unknown figure(s) {unknown} (known: {', '.join(FIGURES)}); --repeat must be >= 1",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        PLANT.update(plants(os.environ.get("BENCH_GUARD_PLANT")))
    except ValueError as err:
        print(err, file=sys.stderr)
        return EXIT_USAGE
    if PLANT and args.record:
        print("--record with BENCH_GUARD_PLANT set: nothing recorded (unset it to record)", file=sys.stderr)
        return EXIT_USAGE
    data = read_recorded(args.recorded)
    load_start, prov = os.getloadavg(), provenance()  # the code measured is the code at the start
    t_all = time.perf_counter()
    figures = []
    try:
        with interruptible():  # SIGTERM and SIGHUP too: temporary studies and the server are cleaned up
            for name in names:
                t = time.perf_counter()
                try:
                    fig = FIGURES[name](args.repeat)
                except Exception as err:  # reported as "not measured" with the reason: cannot tell
                    fig = Figure(name, None, reason=f"{type(err).__name__}: {err}")
                print(
                    f"measured {name}: {fig.value} s (anchor {fig.anchor} s) in "
                    f"{time.perf_counter() - t:.0f} s, load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
                figures.append(fig)
    except KeyboardInterrupt:
        print("guard interrupted: nothing judged, nothing recorded", file=sys.stderr)
        return EXIT_INTERRUPTED
    here = machine(load_start)
    record = find_record(data["records"], here)
    rows, code = compare(figures, record, here)
    flags = ", ".join(f for f, on in (here["flags"] or {}).items() if on) or "none of the int8 ones"
    print(
        f"\nCPU {here['cpu_model']} x {here['cpus']}, flags: {flags}; load average at the start "
        f"{' '.join(map(str, here['load_start']))}, at the end {' '.join(map(str, here['load_end']))}; "
        f"{time.perf_counter() - t_all:.0f} s in all"
    )
    if PLANT:
        print(f"PLANTED slowdown: {PLANT}")
    if record is not None:
        print(
            f"recorded: {record.get('date')} at {record.get('commit')}, "
            f"{'loaded' if record.get('loaded') else 'idle'} (load {record['machine']['load_start'][0]})"
        )
    print(table(rows))
    if record is not None:
        print(f"margin: {margin_for(record, here):.0%} on ratios (25 % when both runs were idle, else 50 %)")
    print(
        {
            0: "verdict: no slowdown beyond the margin (exit 0)",
            1: "verdict: SLOWER (exit 1)",
            3: "verdict: cannot tell (exit 3)",
        }[code]
    )
    if not args.record:
        return code
    try:
        merged, changes = merge(data, new_record(figures, here, prov), force=args.force)
    except ValueError as err:
        print(f"{args.recorded}: {err}", file=sys.stderr)
        return EXIT_USAGE
    write_json_atomic(args.recorded, merged)
    print(f"recorded in {args.recorded}:\n" + "\n".join(changes))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
