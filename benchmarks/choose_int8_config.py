"""Choose the static int8 configuration on NON-dev queries (plan section "OpenVINO int8 variant").

Prints, per candidate ``QuantSpec`` of ``bench.rerankers.openvino.config.CANDIDATES``, the per-query Spearman
of the int8 stand-in (all-MiniLM-L6-v2) against fp32 on 20 held-out NoMIRACL German test queries: queries that
are neither dev queries nor calibration queries. Candidates per query: the top 100 of the bundled NoMIRACL
passages outside the judged pool by fp32 cosine (a first stage of the same kind as the rehearsal's vector
stage, so the scores are as close together as in the reported check). The dev queries are never read except to
check disjointness. Run: ``uv run python benchmarks/choose_int8_config.py [--only NAME ...]``. Timings on a
shared machine are noisy; the load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.core.plan import SEED
from bench.data.bundled import load_sample
from bench.equality.spearman import spearman
from bench.int8.quantize import quantize_model
from bench.int8.rehearsal_data import rehearsal_calibration
from bench.rerankers.openvino.adapter import Int8BiEncoder
from bench.rerankers.openvino.config import CANDIDATES
from bench.rerankers.standin import standin_path

SELECTION_QUERIES = 20
DEPTH = 100


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    sample = load_sample()
    cal, queries, texts = rehearsal_calibration(sample)
    used = {q for q, _ in cal.pairs}
    rest = sorted(q for q in queries if q not in used and q not in sample.queries)
    rng = np.random.default_rng(SEED)
    held = sorted(rest[i] for i in rng.choice(len(rest), size=SELECTION_QUERIES, replace=False))
    print(f"held-out NoMIRACL queries: {len(rest)} available, {len(held)} drawn: {held}", file=sys.stderr)
    from bench.firststage.embed import CachedEmbeddings, MiniLMEmbedder

    embedder = CachedEmbeddings(MiniLMEmbedder())  # the rehearsal's embedding cache (same model, revision)
    pool = sample.nomiracl
    t = time.perf_counter()
    mat = np.asarray(embedder.embed([p.passage_text for p in pool]), dtype=np.float32)
    print(f"fp32 passage vectors: {len(pool)} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    cands: dict[str, list[str]] = {}
    ref: dict[str, np.ndarray] = {}
    for q in held:
        qv = np.asarray(embedder.embed([queries[q]]), dtype=np.float32)[0]
        sims = mat @ qv
        top = np.argsort(-sims, kind="stable")[:DEPTH]
        cands[q] = [pool[i].passage_text for i in top]
        ref[q] = sims[top]  # fp32 cosine (batch composition changes it by float rounding only)
    pairs = cal.texts(queries, texts, "rehearsal calibration")
    for spec in CANDIDATES:
        if args.only and spec.name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "m"
            t = time.perf_counter()
            quantize_model(
                standin_path(),
                out,
                task="feature-extraction",
                pairs=pairs,
                spec=spec,
                max_length=256,
                record={"source_model": "minilm"},
            )
            tq = time.perf_counter() - t
            model = Int8BiEncoder(out)
            rhos = [spearman(ref[q], model.score(queries[q], cands[q]).scores) for q in held]
        row = {
            "spec": spec.to_dict(),
            "min": min(rhos),
            "mean": float(np.mean(rhos)),
            "below_0.99": sum(r < 0.99 for r in rhos),
            "quantize_s": tq,
            "load": os.getloadavg(),
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
