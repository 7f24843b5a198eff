"""The first GPU step (docs/runbook.md, before step 5): time 5 queries at k = 100 (and at 50
and 20) per local model on the GPU and re-plan the GPU steps from what was measured.

Inputs: the bundled MIRACL-de dev queries and judged-pool passages (``data/bundled``), each query with 100
passages drawn with a fixed seed (they stand in for the first-stage candidates: the same corpus, the same
lengths). Per model: load (the adapter's device and dtype), settle the chunk size on the first call (untimed,
as ``bench latency`` does), one warm-up call per k, then 5 timed calls per k (``bench.quality.timing``:
synchronised clock). Prints seconds per call and the projected hours of

* quality (step 6): 4 stages x 305 queries at k = 100 (pointwise: one call per query; jina, listwise, at
  every k);
* GPU latency (step 11): 3 passes x (20 warm-up + 305) calls at each of k = 20, 50, 100.

Run on the GPU machine: ``docker compose run --rm --entrypoint python bench benchmarks/gpu_plan.py``
(``--models``, ``--queries``, ``--device``; ``--models-dir`` for other snapshots). A model that fails is
reported with its error; the others go on.
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEPTHS = (20, 50, 100)
QUALITY_CALLS = 4 * 305  # stages x dev queries
LATENCY_CALLS = 3 * (20 + 305)  # passes x (warm-up + measured), per k
SEED = 20261205


def bundled(n_queries: int, k: int = 100) -> list[tuple[str, list[str]]]:
    base = REPO / "data" / "bundled" / "miracl-de-dev"
    with (base / "topics.miracl-v1.0-de-dev.tsv").open(encoding="utf-8") as fh:
        queries = [line.rstrip("\n").split("\t")[1] for line in fh if line.strip()]
    with (base / "colbert-kit-judged-pool" / "docs.csv").open(encoding="utf-8", newline="") as fh:
        passages = [row["text"] for row in csv.DictReader(fh)]
    rng = random.Random(SEED)
    return [(q, rng.sample(passages, k)) for q in queries[:n_queries]]


def time_model(model: str, calls: list[tuple[str, list[str]]], device: str) -> dict[str, Any]:
    from bench.core.memory import free_device_memory, peak_memory
    from bench.quality.timing import timed_score
    from bench.rerankers.registry import load_reranker

    free_device_memory()
    reranker = load_reranker(model, device=device)
    settle = getattr(reranker, "settle_chunk_size", None)
    chunk = settle(*calls[0]) if callable(settle) else None
    seconds: dict[int, float] = {}
    for k in DEPTHS:
        timed_score(reranker, calls[0][0], calls[0][1][:k])  # warm-up, discarded
        seconds[k] = statistics.mean(timed_score(reranker, q, ps[:k])[1] / 1e9 for q, ps in calls)
    memory = peak_memory()
    del reranker
    free_device_memory()
    return {"seconds": seconds, "chunk": chunk, "peak_reserved_bytes": memory["peak_reserved_bytes"]}


def projection(model: str, seconds: dict[int, float]) -> dict[str, float]:
    listwise = model == "jina-v3.5"
    quality = QUALITY_CALLS * (sum(seconds.values()) if listwise else seconds[100])
    latency = LATENCY_CALLS * sum(seconds.values())
    return {"quality_h": quality / 3600, "latency_h": latency / 3600}


def main(argv: list[str] | None = None) -> int:
    from bench.core.plan import LOCAL_RERANKERS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=list(LOCAL_RERANKERS))
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--models-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.models_dir is not None:
        import os

        os.environ["BENCH_MODELS_DIR"] = str(args.models_dir)
    calls = bundled(args.queries)
    total = {"quality_h": 0.0, "latency_h": 0.0}
    print("model\ts@k20\ts@k50\ts@k100\tchunk\tpeak_reserved_GiB\tquality_h\tlatency_h")
    for model in args.models:
        try:
            got = time_model(model, calls, args.device)
        except Exception as exc:  # one model's failure is reported; the plan of the others still comes out
            print(f"{model}\tfailed: {type(exc).__name__}: {exc}")
            continue
        plan = projection(model, got["seconds"])
        total = {key: total[key] + plan[key] for key in total}
        peak = got["peak_reserved_bytes"]
        gib = "-" if peak is None else f"{peak / 2**30:.1f}"
        s = got["seconds"]
        print(
            f"{model}\t{s[20]:.3f}\t{s[50]:.3f}\t{s[100]:.3f}\t{got['chunk']}\t{gib}\t"
            f"{plan['quality_h']:.2f}\t{plan['latency_h']:.2f}"
        )
    print(f"all\t\t\t\t\t\t{total['quality_h']:.2f}\t{total['latency_h']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
