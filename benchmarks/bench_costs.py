"""The costs section at full study size: time to compute ``costs.json`` and to draw the decision figures.

A synthetic study over the real MIRACL-de dev qrels (305 queries): the four reranked stages, the seven local
models and the two Voyage models at depths 20, 50 and 100 (``analysis.simulation.synthetic.write_study``),
latency blocks in the on-disk format for every machine the plan measures (GPU 3 passes x 305 queries x k
20/50/100; CPU fp32 and int8 100 queries x k 20/100; API 305 queries x k 20/100 with billed tokens; first
stages), and a prices file with made-up prices (a benchmark input, never a result). Prints the wall time of
``compute_costs`` and of ``write_costs`` (figures), with the load average next to them: the machine is shared,
so the numbers are noisy.

Run: ``uv run python benchmarks/bench_costs.py [--out DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analysis.core.plan import INT8_MODEL  # noqa: E402
from analysis.costs.prices import read_prices  # noqa: E402
from analysis.costs.report import compute_costs, write_costs  # noqa: E402
from analysis.costs.section import CostInputs  # noqa: E402
from analysis.inputs.trec import read_qrels  # noqa: E402
from analysis.latency import read_blocks  # noqa: E402
from analysis.reporting.report import stage_record  # noqa: E402
from analysis.reporting.study import analyse_study, default_flags  # noqa: E402
from analysis.simulation.synthetic import write_study  # noqa: E402
from tests.analysis.costs.blocks import block, write_blocks  # noqa: E402

QRELS = REPO / "data" / "bundled" / "miracl-de-dev" / "qrels.miracl-v1.0-de-dev.tsv"
STAGES = ("keyword-71k", "vector-71k", "hybrid-71k", "keyword-full")
LOCAL = {
    "gte-base": 8,
    "bge-v2-m3": 20,
    "jina-v3.5": 30,
    "qwen3-0.6b": 25,
    "mxbai-large-v2": 60,
    "qwen3-4b": 150,
    "querit-4b": 170,
}  # GPU ms at k = 20 (benchmark input)
# the tests' prices file (example values): one file for the tests and this benchmark
PRICES = (Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "prices.toml").read_text(
    encoding="utf-8"
)


def build(root: Path) -> tuple[Path, Path]:
    qrels = read_qrels(QRELS)
    models = {m: 1.0 + i / 5 for i, m in enumerate([*LOCAL, "voyage-rerank-3", "voyage-rerank-3-lite"])}
    write_study(root / "runs", qrels, stages=list(STAGES), models=models, depths=(20, 50, 100), tails=True)
    rng = np.random.default_rng(7)
    qids = sorted(qrels)
    sample = sorted(rng.choice(qids, size=100, replace=False).tolist())
    blocks = []
    for stage in STAGES:
        blocks.append(block("first-stage", stage, 100, {q: float(rng.uniform(5, 30)) for q in qids}))
    for m, ms in LOCAL.items():
        for k in (20, 50, 100):
            for p in (1, 2, 3):
                times = {q: float(ms * k / 20 * rng.uniform(0.9, 1.3)) for q in qids}
                blocks.append(block("gpu", m, k, times, pass_=p))
    for m in ("gte-base", "bge-v2-m3", "jina-v3.5", "qwen3-0.6b"):
        for k in (20, 100):
            blocks.append(block("cpu", m, k, {q: float(LOCAL[m] * 15 * k / 20) for q in sample}))
    for k in (20, 100):
        blocks.append(
            block("cpu", INT8_MODEL, k, {q: float(LOCAL["bge-v2-m3"] * 5 * k / 20) for q in sample})
        )
        for m in ("voyage-rerank-3", "voyage-rerank-3-lite"):
            blocks.append(block("api", m, k, {q: float(rng.uniform(200, 600)) for q in qids}, billed=40 * k))
    write_blocks(root / "latency", blocks)
    (root / "prices.toml").write_text(PRICES, encoding="utf-8")
    return root / "runs", root / "latency"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="Keep the study and figures here.")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="bench-costs-"))
    print(f"load average before: {os.getloadavg()}")
    t = time.perf_counter()
    runs, latency = build(root)
    print(
        f"synthetic study and {len(list(latency.rglob('*.json')))} latency blocks written in "
        f"{time.perf_counter() - t:.1f} s -> {root}"
    )
    stages, _ = analyse_study(runs, QRELS)
    records = {s.stage: stage_record(s, default_flags()) for s in stages}
    t = time.perf_counter()
    blocks = read_blocks(latency, published=True)
    inputs = CostInputs(blocks=blocks, prices=read_prices(root / "prices.toml"), allow_missing=True)
    read_s = time.perf_counter() - t
    t = time.perf_counter()
    costs = compute_costs(records, stages, QRELS, inputs)
    compute_s = time.perf_counter() - t
    t = time.perf_counter()
    write_costs(costs, records, root / "out", figures=True)
    figures_s = time.perf_counter() - t
    print(
        f"read {len(blocks)} blocks: {read_s:.2f} s; compute_costs ({len(costs['options'])} options, "
        f"{len(costs['context'])} context rows): {compute_s:.2f} s; costs.json + {len(STAGES)} figures: "
        f"{figures_s:.2f} s"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
