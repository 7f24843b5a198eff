"""Run one deciding (or further) reference of adapter check 1 as a subprocess.

Usage: ``python references/run.py IN.json OUT.json``. Standalone on purpose: it imports neither ``bench`` nor
anything outside this folder, so it runs under any of the reference environments (the main one,
``references/tf457``, ``references/mxbai``) and the main process never imports a second transformers.

IN.json: {"reference": NAME, "model_dir": PATH, "device": "cpu"|"cuda",
          "dtype": "float32"|"bfloat16"|...|null, "options": {...},
          "queries": [{"qid": ID, "query": TEXT, "passages": [TEXT, ...]}, ...]}
OUT.json: {"reference": NAME, "scores": {qid: [float, ...]}, "versions": {...}, "seconds": float}
Scores are in the order of the passages given. Any failure exits non-zero with the reason on stderr.
"""

from __future__ import annotations

import importlib
import json
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

REFERENCES = {
    "card-seqcls": "card_seqcls",  # bge-v2-m3 (main), gte-base (tf457): AutoModelForSequenceClassification
    "card-qwen3": "card_qwen3",  # Qwen3-Reranker model card: causal LM, yes/no logits
    "card-jina": "card_jina",  # jina-reranker-v3.5 model card: AutoModel + model.rerank
    "mteb-querit": "mteb_querit",  # input format of mteb 2.24.3 QueritWrapper
    "vendor-mxbai": "vendor_mxbai",  # mxbai-rerank==0.1.6 MxbaiRerankV2
}


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("torch", "transformers", "tokenizers", "mxbai-rerank", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    name = spec["reference"]
    if name not in REFERENCES:
        print(f"unknown reference {name!r}; known: {sorted(REFERENCES)}", file=sys.stderr)
        return 2
    module = importlib.import_module(REFERENCES[name])
    start = time.perf_counter()
    scores = module.score_queries(
        spec["model_dir"],
        spec["queries"],
        device=spec.get("device") or "cpu",
        dtype=spec.get("dtype"),
        options=spec.get("options") or {},
    )
    for q in spec["queries"]:
        got = scores.get(q["qid"])
        if got is None or len(got) != len(q["passages"]):
            print(
                f"reference {name} returned no or wrong-length scores for query {q['qid']}", file=sys.stderr
            )
            return 1
    out = {
        "reference": name,
        "scores": scores,
        "versions": versions(),
        "seconds": time.perf_counter() - start,
    }
    Path(argv[2]).write_text(json.dumps(out), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
