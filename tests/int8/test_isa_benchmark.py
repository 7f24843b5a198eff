"""``benchmarks/bench_int8_isa.py``: the plan's int8 agreement across instruction sets on one
machine, native against a oneDNN ISA cap. The cap is chosen from the CPU's flags, a cap is taken as honoured
only when the int8 kernels OpenVINO reports really changed and stayed at or below it, and on a CPU with
nothing above AVX2 the script says so and exits 0 without a verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.rerankers.openvino.manifest import cpu_flags
from bench.rerankers.openvino.runtime import above_cap, isa_summary, kernel_isa
from tests.int8.tiny_int8 import WORDS, TinyInt8
from tests.support.pyforks import RUN_TIME_ENV, Interpreters
from tests.support.scripts import benchmark

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_int8_isa.py"
isa = benchmark("bench_int8_isa")

XEON = {
    "avx512_vnni": True,
    "avx_vnni": True,
    "amx_int8": True,
    "amx_tile": True,
    "avx512f": True,
    "avx2": True,
    "avx512_bf16": True,
    "amx_bf16": True,
}
EPYC = dict.fromkeys(XEON, False) | {"avx2": True}


def test_threshold_is_the_plans() -> None:
    from bench.core.plan import INT8_MIN_SPEARMAN

    assert isa.MIN_SPEARMAN == INT8_MIN_SPEARMAN == 0.99


def test_the_cap_is_the_desktops_avx2_wherever_the_cpu_has_more() -> None:
    """The plan compares the server's int8 scores with the desktop's (Ryzen 9 5950X: AVX2, no AVX-512, no
    VNNI): any CPU with something above AVX2 is capped at AVX2 (was AVX512_CORE, which on a Zen 4
    changed no int8 kernel and gave no verdict)."""
    zen4 = EPYC | {"avx512f": True, "avx512_vnni": True, "avx512_bf16": True}
    for flags in (XEON, zen4, EPYC | {"avx512f": True}, EPYC | {"avx_vnni": True}):
        cap, why = isa.choose_cap({"flags": flags})
        assert cap == isa.DESKTOP_ISA == "AVX2" and "Ryzen 9 5950X" in why
    assert "avx512f, avx512_vnni, avx512_bf16 above it" in isa.choose_cap({"flags": zen4})[1]
    cap, why = isa.choose_cap({"flags": EPYC})
    assert cap is None and "nothing above AVX2" in why
    assert isa.choose_cap({"flags": None})[0] is None


def test_kernel_names_give_their_instruction_set() -> None:
    assert kernel_isa("jit_avx2_I8") == "avx2" and kernel_isa("brgemm_avx512_amx_I8") == "avx512_amx"
    assert kernel_isa("jit_avx512_core_vnni_I8") == "avx512_core_vnni"
    assert kernel_isa("jit_sse42_I8") == "sse42"
    assert kernel_isa("ref_any_I8") is None and kernel_isa("jit_uni_I8") is None
    got = isa_summary(["jit_avx2_I8", "jit_avx512_core_f32", "ref_any_I8"])
    assert got["int8_isa"] == "avx2" and got["any_isa"] == "avx512_core"
    assert above_cap(["brgemm_avx512_amx_I8", "jit_avx512_core_I8", "jit_avx2_f32"], "AVX512_CORE") == [
        "brgemm_avx512_amx_I8"
    ]


def _rt(kernels: list[str], cap: str | None = None) -> dict[str, Any]:
    return {**isa_summary(kernels), "onednn_max_cpu_isa": cap}


def test_a_cap_is_honoured_only_when_the_int8_kernels_changed_and_stay_below_it() -> None:
    native = _rt(["brgemm_avx512_amx_I8", "jit_avx512_core_f32"])
    capped = _rt(["jit_avx512_core_I8", "jit_avx512_core_f32"], "AVX512_CORE")
    ok, how = isa.honoured(native, capped, "AVX512_CORE")
    assert ok and "native avx512_amx, capped avx512_core" in how
    ok, how = isa.honoured(native, _rt(["brgemm_avx512_amx_I8"], "AVX512_CORE"), "AVX512_CORE")
    assert not ok and "still ran int8 kernels above it: brgemm_avx512_amx_I8" in how
    ok, how = isa.honoured(native, _rt(["jit_avx512_core_I8"], None), "AVX512_CORE")
    assert not ok and "saw ONEDNN_MAX_CPU_ISA=None" in how
    ok, how = isa.honoured(_rt(["jit_avx2_I8"]), _rt(["jit_avx2_I8"], "AVX512_CORE"), "AVX512_CORE")
    assert not ok and "the cap changes nothing" in how


QUICK = ("--queries", "3", "--pool", "20")  # the script's quick check: 3 queries, judged passages + 20 others


# what the int8 child imports before it compiles a model: OpenVINO's Python side, optimum-intel, transformers
# and torch; OpenVINO's CPU plugin (and its oneDNN, which reads ONEDNN_MAX_CPU_ISA) loads only at the compile
CHILD_PRELOAD = ("optimum.intel.openvino", "transformers", "bench.rerankers.openvino.adapter")
# what does not choose the children's server: the cap (read after the fork, when the plugin loads), pytest's
# test name and the terminal size the script's process adds (COLUMNS, LINES)
RUN_TIME = (*RUN_TIME_ENV, "ONEDNN_", "PYTEST_", "COLUMNS", "LINES")


@pytest.fixture(scope="module")
def child_python() -> Iterator[str]:
    """The interpreter of the int8 children (the script's ``--child-python``, ``score_in_child``'s
    ``python``): each child is a process of its own, forked from one server that has imported
    ``CHILD_PRELOAD`` (tests/support/pyforks.py), instead of a fresh interpreter that imports them again
    (about 7 CPU-s each, three children). The cap's variable does not choose the server: the child sets it
    before OpenVINO's CPU plugin loads, and the tests check the kernels that really ran under it."""
    interpreters = Interpreters()
    try:
        yield interpreters.wrapper("int8", sys.executable, CHILD_PRELOAD, run_time=RUN_TIME)
    finally:
        interpreters.close()


@pytest.fixture(scope="module")
def script_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, child_python: str
) -> tuple[str | None, subprocess.CompletedProcess[str], Path]:
    """(the cap chosen for this CPU, the script's process, its ``--out`` record): the script run once for the
    module. Where the CPU has a cap it runs the quick check on the session's tiny int8 model (``--pool``,
    ``--folder``), so neither the stand-in's quantisation nor the whole corpus's embedding (minutes on an
    empty cache) happens; the cap's choice, the children, the kernel check and the verdict are the script's
    own."""
    cap, _ = isa.choose_cap(cpu_flags())
    out = tmp_path_factory.mktemp("isa-run") / "record.json"
    folder = [] if cap is None else ["--folder", str(request.getfixturevalue("tiny_int8").folder)]
    quick = [*QUICK, *folder, "--out", str(out), "--child-python", child_python]
    args = [sys.executable, str(SCRIPT)] + ([] if cap is None else quick)
    proc = subprocess.run(args, capture_output=True, text=True, timeout=3600, check=False)
    return cap, proc, out


def test_the_script_on_this_cpu(
    script_run: tuple[str | None, subprocess.CompletedProcess[str], Path],
) -> None:
    """On a CPU with nothing above AVX2 (the development EPYC) the no-verdict path must really happen, exit
    0; where the CPU has more, the script runs on 3 queries and must print an honoured cap and a verdict, or,
    where OpenVINO's native int8 kernels are not above the cap anyway, say so and exit 2 (cannot tell)."""
    cap, proc, _ = script_run
    if cap is None:
        assert proc.returncode == 0, proc.stderr
        assert "no verdict: the CPU has nothing above" in proc.stdout
        assert "Spearman" not in proc.stdout and "cap:" not in proc.stdout
    elif "the cap changes nothing" in proc.stdout:
        # a CPU with VNNI or bf16 flags on which OpenVINO's native int8 kernels are not above the cap (seen on
        # a Zen 4 EPYC with avx512_vnni and avx512_bf16: jit_avx512_i8 natively): nothing to compare, the
        # script's "cannot tell" (exit 2), never a verdict, and the kernels it names really are not above it
        assert proc.returncode == 2, proc.stdout + proc.stderr
        kernels = proc.stdout.split("the native int8 kernels (", 1)[1].split(")", 1)[0].split(", ")
        assert kernels and not above_cap(kernels, cap), proc.stdout
        assert f"cap: ONEDNN_MAX_CPU_ISA={cap}" in proc.stdout and "Spearman" not in proc.stdout
    else:
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        assert f"cap: ONEDNN_MAX_CPU_ISA={cap}" in proc.stdout and "cap honoured" in proc.stdout
        assert "per-query Spearman native vs" in proc.stdout and "precision f32" in proc.stdout


def _native_run(
    script_run: tuple[str | None, subprocess.CompletedProcess[str], Path],
    folder: Path,
    tmp: Path,
    python: str,
) -> tuple[dict[str, Any], Path, Path]:
    """(a native child's record, the int8 folder it scored, its inputs file): the script's native run (the
    same tiny folder, its inputs built again by the script's own ``build_inputs``), or a child run here on
    two queries of four passages where the script made none (a CPU with nothing above AVX2)."""
    _, _, out = script_run
    record = json.loads(out.read_text()) if out.is_file() else {}
    if "native" in record:
        used, inputs = isa.build_inputs(tmp, int(QUICK[1]), pool=int(QUICK[3]), folder=folder)
        return record["native"], used, inputs
    words = WORDS[:4]
    inputs = tmp / "inputs.json"
    rows = {"a": {"query": words[0], "passages": words}, "b": {"query": words[2], "passages": words[::-1]}}
    inputs.write_text(json.dumps({"queries": rows}))
    return isa.score_in_child(folder, inputs, tmp / "n.json", None, python=python), folder, inputs


@pytest.mark.model
@pytest.mark.slow
def test_children_read_the_kernels_that_really_ran(
    script_run: tuple[str | None, subprocess.CompletedProcess[str], Path],
    tiny_int8: TinyInt8,
    child_python: str,
    tmp_path: Path,
) -> None:
    """The cap detection on a real OpenVINO: a tiny int8 model scored natively and under a cap at AVX (below
    every CPU of the study; under SSE41 OpenVINO fails to run an MVN node here) in child processes. oneDNN's
    int8 kernels must drop below AVX2 (to jit_sse42 on the EPYC) while the native run's are above the cap,
    both compiled in f32. The native child is the script's own native run where it made one (``--out``
    record, same inputs rebuilt here), else one run here."""
    native, folder, inputs = _native_run(script_run, tiny_int8.folder, tmp_path, child_python)
    capped = isa.score_in_child(folder, inputs, tmp_path / "c.json", "AVX", python=child_python)
    assert native["runtime"]["inference_precision"] == capped["runtime"]["inference_precision"] == "f32"
    assert native["runtime"]["onednn_max_cpu_isa"] is None
    assert capped["runtime"]["onednn_max_cpu_isa"] == "AVX"
    assert above_cap(native["runtime"]["int8_kernels"], "AVX")  # native ran above the cap
    ok, how = isa.honoured(native["runtime"], capped["runtime"], "AVX")
    assert ok, how
    # the native run presented as if capped is caught: its kernels are above the cap
    fake = {**native["runtime"], "onednn_max_cpu_isa": "AVX"}
    assert not isa.honoured(native["runtime"], fake, "AVX")[0]
    rows = json.loads(inputs.read_text())["queries"]
    assert set(native["scores"]) == set(capped["scores"]) == set(rows)
    assert all(len(capped["scores"][q]) == len(native["scores"][q]) == len(rows[q]["passages"]) for q in rows)
    rho = isa.per_query_spearman(native["scores"], capped["scores"])
    assert all(-1.0 <= r <= 1.0 for r in rho.values())
