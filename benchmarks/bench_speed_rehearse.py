"""The step "first stages" side by side with its anchor, in one run.

1. Embedding throughput of the stand-in (all-MiniLM-L6-v2, fp32, CPU) on passages of the bundled sample,
   the former way (chunks of 2,048 passages in id order, batch 64) against the current way
   (``CachedEmbeddings.embed``: every text still to encode sorted by length, chunks of 512, the
   embedder's batch size), plus each batch size given; passages per wall second and per CPU second of
   this process (CPU seconds are less disturbed by other jobs on a shared machine), and the largest
   difference between the vectors of the two ways.
2. ``bench rehearse`` twice with one fresh, empty cache directory: the first run's step "first stages"
   (target < 2.5 min on an idle 2-core machine) next to the anchor, the repeated run's total.

The load average is printed with every figure: on a busy machine every step is slower.

    uv run python benchmarks/bench_speed_rehearse.py [--passages 1000] [--batches 16,32,64,128]
        [--skip-embed] [--skip-rehearse] [--max-queries N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
STEP_TARGET_S = 150.0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _timed(fn: object) -> tuple[np.ndarray, float, float]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()  # type: ignore[operator]
    return out, time.perf_counter() - w, time.process_time() - c


def bench_embedding(n: int, batches: list[int]) -> None:
    from bench.data import sort_passages
    from bench.data.bundled import load_sample
    from bench.firststage.embed import CachedEmbeddings, MiniLMEmbedder
    from bench.firststage.embed_cache import EmbeddingCache

    corpus = sort_passages(load_sample().corpus)
    rng = np.random.default_rng(20261130)
    picked = sorted(rng.choice(len(corpus), min(n, len(corpus)), replace=False)) if n < len(corpus) else None
    texts = (
        [corpus[i].passage_text for i in picked] if picked is not None else [p.passage_text for p in corpus]
    )
    emb = MiniLMEmbedder()
    emb.encode(texts[:8])  # load and warm up once

    def former() -> np.ndarray:
        emb.batch_size = 64
        parts = []
        for i in range(0, len(texts), 2048):  # as bench.firststage.stages did: per chunk, alphabetical set
            chunk = texts[i : i + 2048]
            unique = sorted(set(chunk))
            vecs = dict(zip(unique, emb.encode(unique), strict=True))
            parts.append(np.stack([vecs[t] for t in chunk]))
        return np.concatenate(parts)

    print(f"embedding {len(texts)} passages; load average before: {_load()}", flush=True)
    ref, wall, cpu = _timed(former)
    print(
        f"  former (2,048-chunks, batch 64)      {len(texts) / wall:7.1f} p/s wall  "
        f"{len(texts) / cpu:7.1f} p/CPU-s  (load {_load()})",
        flush=True,
    )
    for bs in batches:
        emb.batch_size = bs
        with tempfile.TemporaryDirectory() as tmp:
            cached = CachedEmbeddings(emb, EmbeddingCache(Path(tmp) / "e.sqlite"))
            got, wall, cpu = _timed(lambda c=cached: c.embed(texts))
            cached.cache.close()
        diff = float(np.abs(got - ref).max())
        print(
            f"  now (length-sorted, batch {bs:3d})      {len(texts) / wall:7.1f} p/s wall  "
            f"{len(texts) / cpu:7.1f} p/CPU-s  max |diff| {diff:.2e}  (load {_load()})",
            flush=True,
        )


def _rehearse(out: Path, cache: Path, extra: list[str]) -> dict[str, float]:
    env = {**os.environ, "BENCH_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-m", "bench.cli", "rehearse", "--out", str(out), *extra]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"rehearsal failed ({proc.returncode}): {proc.stderr[-2000:]}")
    times: dict[str, float] = json.loads((out / "rehearsal.json").read_text(encoding="utf-8"))["times_s"]
    return times


def bench_rehearsal(extra: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-speed-rehearse-") as tmp:
        cache = Path(tmp) / "cache"  # empty for the first run
        print(f"\nrehearsal {' '.join(extra) or '(all queries)'}; load average before: {_load()}", flush=True)
        first = _rehearse(Path(tmp) / "first", cache, extra)
        load_first = _load()
        again = _rehearse(Path(tmp) / "again", cache, extra)
        step = first["first stages"]
        print(
            f"  first run, step 'first stages' (empty cache): {step:7.1f} s  target < {STEP_TARGET_S:.0f} s"
            f" on an idle machine  (load after: {load_first})"
        )
        print(f"  first run, total:                             {first['total']:7.1f} s")
        total = again["total"]
        print(f"  anchor: repeated run, total:                  {total:7.1f} s  (load after: {_load()})")
        print(f"  repeated run, step 'first stages':            {again['first stages']:7.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=1000)
    ap.add_argument("--batches", default="16,32,64,128")
    ap.add_argument("--skip-embed", action="store_true")
    ap.add_argument("--skip-rehearse", action="store_true")
    ap.add_argument("--max-queries", type=int, default=None)
    a = ap.parse_args()
    print(f"cpus: {os.cpu_count()}", flush=True)
    if not a.skip_embed:
        bench_embedding(a.passages, [int(x) for x in a.batches.split(",")])
    if not a.skip_rehearse:
        bench_rehearsal(["--max-queries", str(a.max_queries)] if a.max_queries else [])


if __name__ == "__main__":
    main()
