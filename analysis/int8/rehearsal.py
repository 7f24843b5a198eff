"""The rehearsal report's int8 section: the rehearsal's ``int8.json`` as a table.

The rehearsal runs the plan's int8 method on its stand-in (all-MiniLM-L6-v2, PyTorch fp32 against OpenVINO
static int8 on the same CPU) and records per-query Spearman, top-10 overlap, nDCG@10 of both and the timings
at k = 20 and 100 in ``<rehearsal>/int8.json``. This section shows them as the latency section shows its
blocks: Spearman min / mean / queries below 0.99, mean top-10 overlap, nDCG@10 of both, p50/p95 of both per
k, the p50 speed-up, and the CPU's int8 instruction-set flags next to them (int8 speed and agreement depend
on them: VNNI/AMX or not). Reads the record only; never imports ``bench``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analysis.core.floatsum import ltr_mean

__all__ = ["cpu_flags_text", "int8_rehearsal_section", "read_int8_record"]

SPEARMAN_MIN = 0.99  # the plan's agreement rule ("Spearman >= 0.99 on every query")


def read_int8_record(path: Path) -> dict[str, Any]:
    """``int8.json`` of a rehearsal; a damaged file is an error naming it and the fix."""
    try:
        record = json.loads(path.read_text(encoding="utf-8-sig"))
        if not isinstance(record, dict) or "latency" not in record or "spearman_min" not in record:
            raise ValueError("not an int8 step record (no 'latency' or 'spearman_min')")
        return record
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"{path}: cannot read the rehearsal's int8 record ({exc}); rerun the rehearsal's int8 step "
            "(delete the file and resume the rehearsal)"
        ) from exc


def cpu_flags_text(record: Mapping[str, Any]) -> str:
    """The CPU model and its int8 flags as recorded with the quantised folder (present / absent)."""
    cpu = (record.get("int8_manifest") or {}).get("cpu") or {}
    flags = cpu.get("flags")
    if not isinstance(flags, Mapping):
        return f"CPU int8 flags not recorded ({cpu.get('source', 'no cpu record')})"
    have = [f for f, on in flags.items() if on]
    lack = [f for f, on in flags.items() if not on]
    vnni = cpu.get("vnni")
    return (
        f"CPU {cpu.get('cpu_model') or 'model unknown'}; int8 flags present: {', '.join(have) or 'none'}; "
        f"absent: {', '.join(lack) or 'none'}; VNNI/AMX int8 instructions: "
        f"{'yes' if vnni else 'no' if vnni is not None else 'unknown'}"
    )


def _ms(x: Any) -> str:
    return "" if x is None else f"{float(x):,.1f}"


def int8_rehearsal_section(record: Mapping[str, Any]) -> list[str]:
    """Markdown lines of the section."""
    rhos = [float(v["spearman"]) for v in record["per_query"].values()]
    below = record.get("below_0.99") or []
    ndcg = record["ndcg@10"]
    lat = record["latency"]
    n = len(record["queries"])
    lines = [
        "## OpenVINO int8 method on the stand-in (rehearsal)",
        "",
        f"{record.get('what', 'int8 against fp32')}. {n} queries of {record.get('first_stage_run', '?')} "
        f"(the latency step's sample), k = 100 for agreement; warm-up {record.get('warmup_calls')} calls per "
        f"k. fp32: {record.get('fp32_source', '?')}. Not the plan's bge-reranker-v2-m3 int8 variant.",
        "",
        f"{cpu_flags_text(record)}.",
        "",
        "| per-query Spearman min | mean | queries below 0.99 | top-10 overlap mean | nDCG@10 fp32 | "
        "nDCG@10 int8 |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {min(rhos):.4f} | {ltr_mean(rhos):.4f} | {len(below)} of {n} | "
        f"{float(record['top10_overlap_mean']):.1f} of 10 | {100 * float(ndcg['fp32']['mean']):.1f} | "
        f"{100 * float(ndcg['int8']['mean']):.1f} |",
        "",
        "| k | n | fp32 p50 ms | fp32 p95 ms | int8 p50 ms | int8 p95 ms | p50 speed-up |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k in sorted(lat["int8"], key=int):
        f, i = lat["fp32"][k], lat["int8"][k]
        lines.append(
            f"| {k} | {i.get('n', '')} | {_ms(f.get('p50_ms'))} | {_ms(f.get('p95_ms'))} | "
            f"{_ms(i.get('p50_ms'))} | {_ms(i.get('p95_ms'))} | "
            f"{float(record['speedup_p50'][k]):.2f}x |"
        )
    verdict = "met" if not below else f"NOT met on {len(below)} of {n} queries"
    load = record.get("loadavg") or {}
    before, after = load.get("before") or [None], load.get("after") or [None]
    lines += [
        "",
        f"The plan's agreement rule (Spearman >= {SPEARMAN_MIN} on every query) is {verdict} here. Timings "
        f"on a shared CPU (load average {_load(before[0])} before, {_load(after[0])} after): a check that "
        "the method runs, not a measurement. The int8 timings are also latency blocks "
        f"({', '.join(record.get('latency_blocks') or ['none written'])}), so the latency and costs sections "
        "show them as CPU int8.",
        "",
    ]
    return lines


def _load(x: Any) -> str:
    return "unknown" if x is None else f"{float(x):.1f}"
