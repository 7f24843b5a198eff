"""The plan's int8 agreement across instruction sets on one machine (plan section "Latency": "int8 scores on
the server must match the desktop (Spearman >= 0.99 on 20 queries)").

The desktop has AVX2 only (Ryzen 9 5950X: no AVX-512, no VNNI); the server may have AVX-512 with VNNI and
bf16. This script runs the rehearsal's int8 stand-in (all-MiniLM-L6-v2 quantised by the study's code and
configuration, compiled with the pinned precision f32) twice in child processes on the same inputs:
natively, and with oneDNN capped by ``ONEDNN_MAX_CPU_ISA`` at the desktop's ``AVX2`` (any CPU
with something above AVX2). It prints the per-query Spearman of the two runs and whether the plan's 0.99
holds on every query.

No verdict, said so, when there is nothing to compare:
- a CPU with nothing above AVX2 (like the development EPYC of 2026-11): exit 0;
- a cap that is not honoured: the capped run's int8 kernels (``primitiveType`` of the execution graph, read
  by ``bench.rerankers.openvino.runtime``) still name an instruction set above the cap, or its native int8
  kernels are not above the cap (the cap would change nothing), or OpenVINO fails to compile or run under it
  (on a Xeon a cap at AVX2 failed on a Softmax node): exit 2.
A verdict: exit 0 if the minimum per-query Spearman is >= 0.99, else 1.

Candidates: the exact cosine top 100 of the bundled corpus under the fp32 stand-in embedder for the first
``--queries`` dev query ids of the bundled sample (what ``benchmarks/bench_int8.py`` uses).

A quick check of the script's own logic (the cap's choice, the kernel check, the Spearman verdict), as its
test runs it: ``--pool N`` takes each query's judged passages and the first N other passages of the bundled
corpus as its candidates, unranked (the per-query Spearman of two runs over the same passages does not
depend on their order), so no passage is embedded; ``--folder DIR`` scores an int8 feature-extraction
folder (``bench.int8.quantize.quantize_model``) in place of the rehearsal's quantised stand-in, so nothing
is quantised. Neither is the plan's check, which runs with the defaults.

    uv run python benchmarks/bench_int8_isa.py [--queries 20] [--cap ISA] [--out FILE]
    uv run python benchmarks/bench_int8_isa.py --queries 3 --pool 20 --folder DIR   # the test's quick check
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.rerankers.openvino.manifest import cpu_flags
from bench.rerankers.openvino.runtime import ISA_ENV, ISA_RANK, above_cap

MIN_SPEARMAN = 0.99  # bench.core.plan.INT8_MIN_SPEARMAN (checked by the test)
DEPTH = 100


#: the desktop's instruction set as the plan names it (Ryzen 9 5950X: AVX2, no AVX-512, no VNNI)
DESKTOP_ISA = "AVX2"
_ABOVE_AVX2 = ("avx512f", "avx_vnni", "avx512_vnni", "avx512_bf16", "amx_int8", "amx_bf16")


def choose_cap(cpu: Mapping[str, Any]) -> tuple[str | None, str]:
    """(the oneDNN cap, why): the desktop's AVX2 (the plan's question: int8 scores of the server against the
    desktop's) on any CPU with something above it; None on a CPU with nothing above AVX2."""
    flags = cpu.get("flags") or {}
    extras = [f for f in _ABOVE_AVX2 if flags.get(f)]
    if extras:
        return DESKTOP_ISA, (
            f"the desktop's instruction set as the plan names it (Ryzen 9 5950X: AVX2, no "
            f"AVX-512, no VNNI); this CPU has {', '.join(extras)} above it"
        )
    top = "AVX2" if flags.get("avx2") else "below AVX2"
    return None, (
        f"the CPU has nothing above {top} (no AVX-512, no VNNI, no bf16, no AMX): it is the "
        "desktop's instruction set already, native and capped runs would be the same"
    )


def honoured(native: Mapping[str, Any], capped: Mapping[str, Any], cap: str) -> tuple[bool, str]:
    """Whether the cap changed the int8 kernels and kept them at or below it (from both runs' reports)."""
    if capped.get("onednn_max_cpu_isa") != cap:
        return False, f"the capped child saw {ISA_ENV}={capped.get('onednn_max_cpu_isa')!r}, not {cap!r}"
    over = above_cap(capped["int8_kernels"], cap)
    if over:
        return False, f"under {ISA_ENV}={cap} OpenVINO still ran int8 kernels above it: {', '.join(over)}"
    if not above_cap(native["int8_kernels"], cap):
        return False, (
            f"the native int8 kernels ({', '.join(native['int8_kernels'])}) are not above {cap}: "
            "the cap changes nothing"
        )
    others = above_cap(capped["kernels"], cap)
    note = ""
    if others:
        note = f"; OpenVINO's own kernels above the cap (not oneDNN's, not int8): {', '.join(others)}"
    return True, f"int8 kernels native {native['int8_isa']}, capped {capped['int8_isa']}{note}"


def per_query_spearman(
    a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]]
) -> dict[str, float]:
    from bench.equality.spearman import spearman

    return {q: float(spearman(a[q], b[q])) for q in sorted(a)}


def score_in_child(
    folder: Path,
    inputs: Path,
    out: Path,
    cap: str | None,
    *,
    timeout_s: float = 1800,
    python: str | None = None,
) -> dict[str, Any]:
    """Run this script's ``--child`` on ``inputs`` with the cap (None: native); its record, or BenchError.
    ``python``: the interpreter of the child (default: this one's, ``sys.executable``)."""
    from bench.core.errors import BenchError

    env = {k: v for k, v in os.environ.items() if k != ISA_ENV}
    if cap is not None:
        env[ISA_ENV] = cap
    cmd = [
        python or sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        "--folder",
        str(folder),
        "--inputs",
        str(inputs),
        "--out",
        str(out),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        where = f"under {ISA_ENV}={cap}" if cap else "natively"
        tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
        raise BenchError(f"the int8 stand-in could not run {where} (exit {proc.returncode}):\n{tail}")
    return json.loads(out.read_text())


def child(folder: Path, inputs: Path, out: Path) -> int:
    from bench.rerankers.openvino.adapter import Int8BiEncoder

    data = json.loads(inputs.read_text())
    model = Int8BiEncoder(folder)
    scores = {
        q: [float(x) for x in model.score(row["query"], row["passages"]).scores]
        for q, row in data["queries"].items()
    }
    out.write_text(json.dumps({"scores": scores, "runtime": model.meta.extra["openvino_runtime"]}))
    return 0


def build_inputs(
    directory: Path, n: int, *, pool: int | None = None, folder: Path | None = None
) -> tuple[Path, Path]:
    """(the int8 folder: ``folder`` or the stand-in, the inputs file: n queries x their candidates' texts,
    the top 100 of the bundled corpus or, with ``pool``, the ``pool_candidates``)."""
    from bench.rehearse.inputs import load_bundled

    if folder is None:
        from bench.rehearse.int8 import quantized_standin

        folder, _ = quantized_standin(lambda m: print(m, file=sys.stderr, flush=True))
    else:
        from bench.core.errors import BenchError
        from bench.rerankers.openvino.manifest import verify_folder

        task = verify_folder(folder)["task"]
        if task != "feature-extraction":
            raise BenchError(
                f"--folder {folder}: a {task} model; the stand-in's check needs feature-extraction"
            )
    bundled = load_bundled()
    texts = {p.docid: p.passage_text for p in bundled.corpus}
    if pool is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_int8 import exact_candidates

        from analysis.inputs.trec import read_run

        run = read_run(exact_candidates(directory, n), allow_unknown_queries=True)
        candidates = {q: [d for d, _ in run[q][:DEPTH]] for q in run}
    else:
        candidates = pool_candidates(bundled, n, pool)
    rows = {}
    for q in sorted(candidates):
        rows[q] = {"query": bundled.queries[q], "passages": [texts[d] for d in candidates[q]]}
    path = directory / "inputs.json"
    path.write_text(json.dumps({"queries": rows}))
    return folder, path


def pool_candidates(bundled: Any, n: int, pool: int) -> dict[str, list[str]]:
    """``--pool``: for each of the first ``n`` dev query ids, its judged passages and the first ``pool``
    passages of the bundled corpus judged for none of those queries, in corpus order, at most ``DEPTH``."""
    qids = sorted(bundled.queries)[:n]
    judged = {q: set(bundled.qrels.get(q, {})) for q in qids}
    everyone = set().union(*judged.values())
    others = [p.docid for p in bundled.corpus if p.docid not in everyone][:pool]
    return {q: ([p.docid for p in bundled.corpus if p.docid in judged[q]] + others)[:DEPTH] for q in qids}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=20, help="first N dev query ids of the bundled sample")
    ap.add_argument("--cap", default=None, help="oneDNN ISA to cap at (default: chosen from the CPU's flags)")
    ap.add_argument("--out", type=Path, default=None, help="write both runs' records and the verdict here")
    ap.add_argument(
        "--pool",
        type=int,
        default=None,
        metavar="N",
        help="quick check: candidates are each query's judged passages and N others, unranked (no embedding)",
    )
    ap.add_argument(
        "--folder",
        type=Path,
        default=None,
        help="score this int8 feature-extraction folder instead of quantising the rehearsal's stand-in",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--inputs", type=Path, default=None, help=argparse.SUPPRESS)
    # the children's interpreter (default: this one's); its test passes a stand-in that forks each child from
    # one process that has imported OpenVINO's Python side, optimum and transformers
    ap.add_argument("--child-python", default=None, help=argparse.SUPPRESS)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.child:
        return child(args.folder, args.inputs, args.out)
    if args.pool is not None and args.pool < 0:
        print(f"--pool {args.pool}: give a count of passages, 0 or more")
        return 2
    from bench.core.errors import BenchError

    cpu = cpu_flags()
    on = [f for f, v in (cpu["flags"] or {}).items() if v]
    print(
        f"CPU: {cpu['cpu_model']}; flags {' '.join(on) or 'none'}; VNNI {cpu['vnni']}, bf16 {cpu['bf16']}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    cap, why = (args.cap, "--cap given") if args.cap else choose_cap(cpu)
    if cap is None:
        print(f"no verdict: {why}")
        return 0
    if cap.lower() not in ISA_RANK:
        print(f"--cap {cap}: not a oneDNN ISA this script knows ({', '.join(k.upper() for k in ISA_RANK)})")
        return 2
    print(f"cap: {ISA_ENV}={cap} ({why})")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            folder, inputs = build_inputs(Path(tmp), args.queries, pool=args.pool, folder=args.folder)
            python = args.child_python
            native = score_in_child(folder, inputs, Path(tmp) / "native.json", None, python=python)
            capped = score_in_child(folder, inputs, Path(tmp) / "capped.json", cap, python=python)
        except BenchError as exc:
            print(f"no verdict: {exc.message}")
            return 2
    for name, rec in (("native", native), ("capped", capped)):
        rt = rec["runtime"]
        print(
            f"{name}: precision {rt['inference_precision']}, int8 kernels on {rt['int8_isa']}, threads "
            f"{rt['threads']}, streams {rt['streams']}, execution mode {rt['execution_mode']}"
        )
    ok, how = honoured(native["runtime"], capped["runtime"], cap)
    record: dict[str, Any] = {
        "cpu": cpu,
        "cap": cap,
        "cap_honoured": ok,
        "cap_detail": how,
        "native": native,
        "capped": capped,
    }
    if not ok:
        print(f"no verdict: cap not honoured: {how}")
        code = 2
    else:
        print(f"cap honoured: {how}")
        rho = per_query_spearman(native["scores"], capped["scores"])
        for q, r in rho.items():
            print(f"  {q}: Spearman {r:.4f}{'' if r >= MIN_SPEARMAN else '  < 0.99'}")
        low, mean = min(rho.values()), sum(rho.values()) / len(rho)
        holds = all(r >= MIN_SPEARMAN for r in rho.values())
        print(
            f"per-query Spearman native vs {cap}: min {low:.4f}, mean {mean:.4f} over {len(rho)} queries; "
            f"the plan's >= {MIN_SPEARMAN} on every query: "
            f"{'HOLDS' if holds else 'DOES NOT HOLD'}"
        )
        record.update(spearman=rho, spearman_min=low, spearman_mean=mean, holds=holds)
        code = 0 if holds else 1
    if args.out:
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
