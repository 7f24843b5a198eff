"""The int8 goal on this CPU (plan section "OpenVINO int8 variant"): Spearman >= 0.99 on every one
of the 20 queries and a p50 speed-up of at least 2x over PyTorch fp32 at k = 100, for the stand-in
(all-MiniLM-L6-v2) quantised with the study's code and configuration.

Runs the rehearsal's own int8 step (``bench.rehearse.int8``: quantise or reuse, then fp32 / int8 timed
alternately per query, texts in, scores out) on the first 20 dev query ids of the bundled sample, with
candidates from ``--rehearsal DIR`` (its ``runs/first-stage/vector-71k.trec``) or, by default, the exact
cosine top 100 of the bundled corpus under the stand-in embedder (what the rehearsal's vector stage computes
with its exact-search substitute). Prints the figures, the load average and the CPU's int8 flags, and
whether each goal is met. Timings on a shared machine are noisy.

    uv run python benchmarks/bench_int8.py [--rehearsal DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from analysis.inputs.trec import write_run
from bench.firststage.embed import CachedEmbeddings, MiniLMEmbedder
from bench.firststage.exact import exact_top_k
from bench.rehearse.inputs import load_bundled
from bench.rehearse.int8 import QUERIES, run_int8_step, summary_lines
from bench.rerankers.openvino.manifest import cpu_flags

GOAL_SPEARMAN = 0.99
GOAL_SPEEDUP = 2.0


def exact_candidates(directory: Path, n: int = QUERIES) -> Path:
    inputs = load_bundled()
    qids = sorted(inputs.queries)[:n]
    emb = CachedEmbeddings(MiniLMEmbedder())
    docs = emb.embed([p.passage_text for p in inputs.corpus])
    qv = emb.embed([inputs.queries[q] for q in qids])
    top = exact_top_k(np.asarray(qv), np.asarray(docs), 100)
    sims = np.asarray(qv) @ np.asarray(docs).T
    run = {q: [(inputs.corpus[j].docid, float(sims[i, j])) for j in top[i]] for i, q in enumerate(qids)}
    path = directory / "vector-71k.trec"
    write_run(path, run, "vector-71k")
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rehearsal", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None, help="Write the step's record here as JSON.")
    args = ap.parse_args()
    inputs = load_bundled()
    with tempfile.TemporaryDirectory() as tmp:
        run = (
            args.rehearsal / "runs" / "first-stage" / "vector-71k.trec"
            if args.rehearsal
            else exact_candidates(Path(tmp))
        )
        record = run_int8_step(
            Path(tmp),
            queries=inputs.queries,
            first_stage_run=run,
            texts={p.docid: p.passage_text for p in inputs.corpus},
            qrels=inputs.qrels,
            log=lambda m: print(m, file=sys.stderr, flush=True),
        )
        if args.out:
            args.out.write_text((Path(tmp) / "int8.json").read_text())
    print("\n".join(summary_lines(record)))
    flags = cpu_flags()
    cores = os.cpu_count()
    print(f"CPU: {flags['cpu_model']}; int8 flags {flags['flags']}; VNNI: {flags['vnni']}; cores {cores}")
    spearman_ok = record["spearman_min"] >= GOAL_SPEARMAN
    speed_ok = record["speedup_p50"]["100"] >= GOAL_SPEEDUP
    print(
        f"goal Spearman >= {GOAL_SPEARMAN} on every query: {'MET' if spearman_ok else 'NOT MET'} "
        f"(min {record['spearman_min']:.4f}, below: {record['below_0.99']})"
    )
    print(
        f"goal p50 speed-up >= {GOAL_SPEEDUP}x at k = 100: {'MET' if speed_ok else 'NOT MET'} "
        f"({record['speedup_p50']['100']:.2f}x)"
    )
    print(json.dumps({"int8_manifest": record["int8_manifest"]["quantization"]}))
    return 0 if spearman_ok and speed_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
