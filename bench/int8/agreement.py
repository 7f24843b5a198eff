"""int8 agreement across machines (plan section "Latency": "int8 scores on the server must match the
desktop (Spearman >= 0.99 on 20 queries)").

A scores file holds one machine's int8 scores on the 20 queries of adapter check 1 (the first 20
MIRACLReranking queries, 100 fixed candidates each: the same input on every machine, no first stage
needed), ids and numbers only, plus the machine's CPU flags and the quantised folder's manifest digest.
``compare`` computes Spearman per query on the candidates both files share; a query passes at >= 0.99, a
missing query, a different candidate list or a NaN coefficient fails.

Two scores files are compared only if both were made with the same quantisation configuration and the same
inference precision (recorded from the quantised folder's manifest and from what OpenVINO reported after
compiling); otherwise the comparison is refused, naming both (across instruction sets the plan's
0.99 held only with the overflow fix and f32). The verdict of a comparison goes to ``VERDICT``
(``results/int8/agreement.json``), pass or fail, with both machines' CPU flags; the published CPU latency
rates ``bge-v2-m3-int8`` by its base model's adapter check plus that verdict (``int8_outcome``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic
from analysis.core.floatsum import ltr_mean
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.plan import INT8_MIN_SPEARMAN, INT8_SPEARMAN_QUERIES
from bench.equality.spearman import spearman

FORMAT = "int8-scores/1"
VERDICT_FORMAT = "int8-agreement/1"
VERDICT = Path("results") / "int8" / "agreement.json"  # relative to the checkout
MIN_SPEARMAN = INT8_MIN_SPEARMAN  # plan: Latency, "Spearman >= 0.99 on 20 queries"
QUERIES = INT8_SPEARMAN_QUERIES


def configuration(manifest: Mapping[str, Any], runtime: Mapping[str, Any] | None) -> dict[str, Any]:
    """What must be equal on both machines: the quantisation configuration and the inference precision
    (the manifest's and the one OpenVINO reported after compiling)."""
    return {
        "quantization": manifest.get("quantization"),
        "inference_precision": manifest.get("inference_precision"),
        "runtime_inference_precision": (runtime or {}).get("inference_precision"),
    }


def scores_record(
    scores: Mapping[str, tuple[Sequence[str], Sequence[float]]],
    *,
    model: str,
    machine: Mapping[str, Any],
    manifest_sha256: str | None,
    inputs: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    runtime: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "model": model,
        "machine": dict(machine),
        "int8_manifest_sha256": manifest_sha256,
        "configuration": dict(config) if config is not None else None,
        "openvino_runtime": dict(runtime) if runtime is not None else None,
        "inputs": dict(inputs),
        "queries": {q: {"docids": list(d), "scores": [float(x) for x in s]} for q, (d, s) in scores.items()},
    }


def write_scores(path: Path, record: Mapping[str, Any]) -> None:
    write_json_atomic(path, record)


def read_scores(path: Path) -> dict[str, tuple[list[str], list[float]]]:
    return read_scores_file(path)[1]


def read_scores_file(path: Path) -> tuple[dict[str, Any], dict[str, tuple[list[str], list[float]]]]:
    """(the whole record, query -> (docids, scores))."""
    if not path.is_file():
        raise BenchError(
            f"{path}: scores file missing (write one with `{hint('int8 agreement --write FILE')}`)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchError(f"{path}: not valid JSON ({exc})") from exc
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(data.get("queries"), dict)
    ):
        raise BenchError(f"{path}: not an int8 scores file (format {FORMAT!r} with 'queries' expected)")
    out: dict[str, tuple[list[str], list[float]]] = {}
    for qid, row in data["queries"].items():
        docids, scores = (
            row.get("docids") if isinstance(row, dict) else None,
            row.get("scores") if isinstance(row, dict) else None,
        )
        if not isinstance(docids, list) or not isinstance(scores, list) or len(docids) != len(scores):
            raise BenchError(f"{path}: query {qid}: 'docids' and 'scores' must be lists of equal length")
        try:
            values = [float(x) for x in scores]
        except (TypeError, ValueError) as exc:
            raise BenchError(f"{path}: query {qid}: a score is not a number") from exc
        out[str(qid)] = ([str(d) for d in docids], values)
    return data, out


def require_same_configuration(
    mine: Mapping[str, Any], mine_label: str, theirs: Mapping[str, Any] | None, theirs_label: str
) -> None:
    """Refuse to compare scores made with different configurations or precisions, naming both."""
    rewrite = f"write it again on that machine: `{hint('int8 agreement --write FILE')}`"
    if not isinstance(theirs, Mapping) or any(theirs.get(k) is None for k in mine):
        raise BenchError(
            f"{theirs_label}: records no quantisation configuration and inference precision (written before "
            f"they were recorded); it cannot be shown to match {mine_label}; {rewrite}"
        )
    differ = [k for k in mine if mine[k] != theirs.get(k)]
    if differ:

        def show(c: Mapping[str, Any]) -> str:
            q = c.get("quantization")
            name = q.get("name") if isinstance(q, Mapping) else q
            return (
                f"configuration {name!r}, precision {c.get('inference_precision')!r} (OpenVINO reported "
                f"{c.get('runtime_inference_precision')!r})"
            )

        raise BenchError(
            f"int8 scores made differently, not compared ({', '.join(differ)} differ): {mine_label}: "
            f"{show(mine)}; {theirs_label}: {show(theirs)}. Both machines must use the same quantised "
            f"configuration and precision; {rewrite}"
        )


def flags_line(machine: Mapping[str, Any] | None) -> str:
    """One machine's CPU and its int8 / bf16 flags, for printing next to the verdict."""
    if not isinstance(machine, Mapping) or not isinstance(machine.get("flags"), Mapping):
        return "CPU flags not recorded"
    on = [f for f, v in machine["flags"].items() if v]
    flags = " ".join(on) or "none"
    return f"{machine.get('cpu_model')}: {flags} (VNNI {machine.get('vnni')}, bf16 {machine.get('bf16')})"


def int8_outcome(base: Mapping[str, Any], verdict_path: Path, manifest_sha256: str | None) -> dict[str, Any]:
    """The rating of the int8 variant: its base model's adapter-check outcome ``base`` plus a passed
    agreement verdict for the quantised folder in use (``manifest_sha256``; None: folder not there)."""
    model = f"{base['model']}-int8"

    def no(reason: str) -> dict[str, Any]:
        return {"model": model, "rated": False, "reason": reason}

    if not base["rated"]:
        return no(f"rated by {base['model']}'s adapter check, which is not passed: {base['reason']}")
    how = (
        f"run `{hint('int8 agreement --against FILE')}` on this machine (FILE: the desktop's scores, "
        "written there with --write FILE)"
    )
    if not verdict_path.is_file():
        return no(f"no int8 agreement verdict at {verdict_path}; {how}")
    try:
        data = json.loads(verdict_path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchError(f"{verdict_path}: not valid JSON ({exc}); {how}") from None
    if (
        not isinstance(data, dict)
        or data.get("format") != VERDICT_FORMAT
        or type(data.get("passed")) is not bool
    ):
        raise BenchError(f"{verdict_path}: not an int8 agreement verdict ({VERDICT_FORMAT!r}); {how}")
    if not data["passed"]:
        return no(
            f"int8 agreement failed ({verdict_path}: queries {', '.join(map(str, data.get('failed', [])))})"
        )
    if manifest_sha256 is not None and data.get("int8_manifest_sha256") != manifest_sha256:
        return no(
            f"{verdict_path} was made with another quantised folder (manifest SHA-256 "
            f"{data.get('int8_manifest_sha256')}, this one {manifest_sha256}); {how}"
        )
    return {
        "model": model,
        "rated": True,
        "reason": f"{base['model']} rated ({base['reason']}); int8 agreement passed ({verdict_path})",
    }


@dataclass(frozen=True)
class QueryAgreement:
    qid: str
    spearman: float | None  # None: not computable (missing query or different candidates)
    passed: bool
    reason: str


def compare(
    mine: Mapping[str, tuple[Sequence[str], Sequence[float]]],
    theirs: Mapping[str, tuple[Sequence[str], Sequence[float]]],
    *,
    threshold: float = MIN_SPEARMAN,
) -> list[QueryAgreement]:
    """Per query of ``theirs`` (the committed reference), in sorted order."""
    out: list[QueryAgreement] = []
    for qid in sorted(theirs):
        if qid not in mine:
            out.append(QueryAgreement(qid, None, False, "query missing on this machine"))
            continue
        d_ref, s_ref = theirs[qid]
        d_me, s_me = mine[qid]
        if sorted(d_ref) != sorted(d_me) or len(set(d_ref)) != len(d_ref):
            out.append(QueryAgreement(qid, None, False, "candidate lists differ"))
            continue
        by_id = dict(zip(d_me, s_me, strict=True))
        rho = spearman(list(s_ref), [by_id[d] for d in d_ref])
        ok = not math.isnan(rho) and rho >= threshold
        out.append(QueryAgreement(qid, rho, ok, "" if ok else f"Spearman {rho:.4f} < {threshold}"))
    return out


def summary(rows: Sequence[QueryAgreement]) -> dict[str, Any]:
    vals = [r.spearman for r in rows if r.spearman is not None and not math.isnan(r.spearman)]
    return {
        "queries": len(rows),
        "passed": sum(r.passed for r in rows),
        "failed": [r.qid for r in rows if not r.passed],
        "min_spearman": min(vals) if vals else None,
        "mean_spearman": ltr_mean(vals) if vals else None,
        "threshold": MIN_SPEARMAN,
        "per_query": {r.qid: {"spearman": r.spearman, "passed": r.passed, "reason": r.reason} for r in rows},
    }
