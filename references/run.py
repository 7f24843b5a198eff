"""Run one deciding (or further) reference of adapter check 1 as a subprocess.

Usage: ``python references/run.py IN.json OUT.json``. Standalone on purpose: it imports neither ``bench`` nor
anything outside this folder, so it runs under any of the reference environments (the main one,
``references/tf457``, ``references/mxbai``) and the main process never imports a second transformers.

IN.json: {"reference": NAME, "model_dir": PATH, "device": "cpu"|"cuda",
          "dtype": "float32"|"bfloat16"|...|null, "options": {...},
          "queries": [{"qid": ID, "query": TEXT, "passages": [TEXT, ...]}, ...]}
OUT.json: {"reference": NAME, "scores": {qid: [float, ...]}, "versions": {...}, "seconds": float}
Scores are in the order of the passages given. Any failure exits non-zero with the reason on stderr.

Several references in one process (one torch + transformers import for all of them, which dominates on tiny
inputs): IN.json ``{"jobs": [<one IN.json as above>, ...]}``; OUT.json ``{"results": [<OUT.json as above> or
{"reference": NAME, "error": TEXT}, ...]}`` in the order of the jobs, rewritten after every job, so a crash
keeps the results of the jobs before it. One model is loaded at a time; each job's failure is its own.
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


class JobFailed(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def run_job(spec: dict) -> dict:
    name = spec["reference"]
    if name not in REFERENCES:
        raise JobFailed(f"unknown reference {name!r}; known: {sorted(REFERENCES)}", 2)
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
            raise JobFailed(f"reference {name} returned no or wrong-length scores for query {q['qid']}", 1)
    return {
        "reference": name,
        "scores": scores,
        "versions": versions(),
        "seconds": time.perf_counter() - start,
    }


def release_memory() -> None:
    """Free the last job's model before the next one loads (one GPU holds one model at a time)."""
    import gc

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    out_path = Path(argv[2])
    if "jobs" not in spec:
        try:
            out = run_job(spec)
        except JobFailed as exc:
            print(str(exc), file=sys.stderr)
            return exc.code
        out_path.write_text(json.dumps(out), encoding="utf-8")
        return 0
    results: list[dict] = []
    for job in spec["jobs"]:
        try:
            results.append(run_job(job))
        except Exception as exc:  # this job's failure is its own; the next job still runs
            import traceback

            traceback.print_exc(file=sys.stderr)
            results.append({"reference": job.get("reference"), "error": f"{type(exc).__name__}: {exc}"})
        release_memory()
        tmp = out_path.with_name(out_path.name + ".part")
        tmp.write_text(json.dumps({"results": results}), encoding="utf-8")
        tmp.replace(out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
