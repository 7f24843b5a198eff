"""The rehearsal's calibration sources: NoMIRACL German test queries and passages outside the judged pool.

The bundled NoMIRACL prompts (``data/bundled/miracl-de-nomiracl``) carry the German question between
``QUESTION:\\n`` and ``\\n\\nCONTEXTS:\\n``; rows with a null prompt are skipped. NoMIRACL test queries share
no id with the dev topics (data/bundled/SOURCES.md); ``draw_pairs`` checks it again.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.paths import bundled_dir
from bench.core.plan import SEED
from bench.data.bundled import NOMIRACL_FILES, Sample, load_sample
from bench.int8.calibration import CALIBRATION_PAIRS, CalibrationSet, draw_pairs

_QUESTION = "\n\nQUESTION:\n"
_CONTEXTS = "\n\nCONTEXTS:\n"
SOURCE = "rehearsal: NoMIRACL German test queries x bundled NoMIRACL passages outside the judged dev pool"


def read_nomiracl_queries(base: Path | None = None) -> dict[str, str]:
    """query id -> German question, from the bundled NoMIRACL prompts (same id, same text, or an error)."""
    folder = (base if base is not None else bundled_dir()) / "miracl-de-nomiracl"
    out: dict[str, str] = {}
    for name in NOMIRACL_FILES:
        path = folder / name
        with path.open(encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                row = json.loads(line)
                prompt = row.get("prompt")
                if prompt is None:
                    continue
                start, end = prompt.find(_QUESTION), prompt.find(_CONTEXTS)
                if start < 0 or end < start:
                    raise BenchError(f"{path}:{lineno}: prompt lacks the QUESTION/CONTEXTS markers")
                qid, query = str(row["query_id"]), prompt[start + len(_QUESTION) : end].strip()
                if out.get(qid, query) != query:
                    raise BenchError(f"{path}:{lineno}: query {qid} has another text than in an earlier row")
                out[qid] = query
    return out


def rehearsal_calibration(
    sample: Sample | None = None, n: int = CALIBRATION_PAIRS
) -> tuple[CalibrationSet, dict[str, str], dict[str, str]]:
    """(calibration set, its query texts, its passage texts) for the rehearsal."""
    sample = sample if sample is not None else load_sample()
    queries = read_nomiracl_queries()
    cal = draw_pairs(
        queries,
        sample.nomiracl,
        n=n,
        seed=SEED,
        source=SOURCE,
        dev_queries=sample.queries,
        excluded_passages=[p.docid for p in sample.judged],
        excluded_name="judged_pool",
    )
    texts = {p.docid: p.passage_text for p in sample.nomiracl}
    return cal, queries, texts
