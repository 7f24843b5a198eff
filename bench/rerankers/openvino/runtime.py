"""Compiling an int8 model and reading back what OpenVINO really runs (plan sections "Latency": "int8 scores
on the server must match the desktop", and "OpenVINO int8 variant").

``compile_int8`` is the one place an int8 model is compiled: every adapter
(``bench.rerankers.openvino.adapter``) loads
through it, with the pinned ``COMPILE_CONFIG`` (inference precision f32, D-037). ``runtime_properties``
reads what the compiled model reports (inference precision, execution mode, threads, streams, performance
hint) and the kernels of its execution graph (``primitiveType`` of each node, e.g. ``jit_avx2_I8`` or
``brgemm_avx512_amx_I8``), from which the instruction set the int8 products ran on is read; beside them the
CPU's int8 and bf16 flags and any oneDNN ISA cap set in the environment. A compiled model that reports
another precision than the pinned one is refused (an OpenVINO that ignores the hint).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from bench.core.errors import BenchError
from bench.rerankers.openvino.config import COMPILE_CONFIG, INFERENCE_PRECISION
from bench.rerankers.openvino.manifest import cpu_flags

ISA_ENV: Final = "ONEDNN_MAX_CPU_ISA"

# oneDNN instruction sets by rank (the names ONEDNN_MAX_CPU_ISA takes, lower case). A kernel name's ISA is
# the highest of these tokens it contains; "uni", "ref", "any" and "undef" kernels name none.
ISA_RANK: Final = {
    "sse41": 1,
    "sse42": 1,  # OpenVINO's own kernels say sse42 where oneDNN says sse41
    "avx": 2,
    "avx2": 3,
    "avx2_vnni": 4,
    "avx2_vnni_2": 4,
    "avx512_core": 5,
    "avx512": 5,
    "avx512_core_vnni": 6,
    "avx512_core_bf16": 7,
    "avx512_core_fp16": 7,
    "avx512_core_amx": 8,
    "avx512_amx": 8,
    "amx": 8,
}
_ISA_RE = re.compile(
    r"(sse4[12]|avx512_core_amx|avx512_amx|amx|avx512_core_vnni|avx512_core_bf16|"
    r"avx512_core_fp16|avx512_core|avx512|avx2_vnni_2|avx2_vnni|avx2|avx)"
)


def decline_usage_telemetry() -> None:
    """OpenVINO's and NNCF's usage telemetry declined in this process, before either library is imported.

    Both ask openvino_telemetry with ``enable_opt_in_dialog=False``, which counts a missing consent file as
    consent: `int8 quantize` (NNCF at its import, OpenVINO's converter at each export) then sent usage events
    to Google Analytics, each from a process forked from the command's and waited for (1.5-2 CPU-s and about
    3 s of a 6 s quantisation on the miniature, 2026-12-06). A study sends nothing its author did not ask
    for, and no process of its own size is forked beside a measurement. The effect is that of the
    libraries' own opt-out (a consent file holding 0), without writing that file to the home folder. Without
    openvino_telemetry installed both libraries use their stubs, and nothing is to be done."""
    try:
        # lazy: comes with openvino (the int8 variant only), imported just before it
        from openvino_telemetry.utils.opt_in_checker import ConsentCheckResult, OptInChecker
    except ImportError:
        return

    def declined(self: Any, *args: Any, **kwargs: Any) -> Any:
        return ConsentCheckResult.DECLINED

    OptInChecker.check = declined  # type: ignore[method-assign]


def compile_int8(model_class: Any, folder: Path) -> Any:
    """``model_class.from_pretrained(folder)`` compiled with the pinned precision; refuses another one."""
    model = model_class.from_pretrained(str(folder), local_files_only=True, ov_config=dict(COMPILE_CONFIG))
    props = runtime_properties(model.request)
    if props["inference_precision"] != INFERENCE_PRECISION:
        raise BenchError(
            f"{folder}: OpenVINO compiled the model with inference precision "
            f"{props['inference_precision']!r} although {INFERENCE_PRECISION!r} was set "
            "(INFERENCE_PRECISION_HINT); this OpenVINO ignores the hint, and its int8 scores are not "
            "comparable across machines"
        )
    return model


def kernel_isa(kernel: str) -> str | None:
    """The instruction set a kernel name names (``jit_avx2_I8`` -> ``avx2``), None for ref/uni kernels."""
    found = _ISA_RE.findall(kernel.lower())
    return max(found, key=lambda t: ISA_RANK[t]) if found else None


def isa_summary(kernels: Iterable[str]) -> dict[str, Any]:
    """Highest ISA among the int8 kernels (names ending ``_I8``/``_i8``) and among all kernels."""
    names = sorted(set(kernels))
    int8 = [k for k in names if k.lower().endswith("_i8")]

    def top(ks: Iterable[str]) -> str | None:
        isas = [i for k in ks if (i := kernel_isa(k)) is not None]
        return max(isas, key=lambda t: ISA_RANK[t]) if isas else None

    return {"int8_isa": top(int8), "any_isa": top(names), "int8_kernels": int8, "kernels": names}


def above_cap(kernels: Iterable[str], cap: str) -> list[str]:
    """Kernels whose ISA ranks above the oneDNN cap ``cap`` (e.g. ``AVX512_CORE``)."""
    limit = ISA_RANK.get(cap.lower())
    if limit is None:
        raise BenchError(f"unknown oneDNN ISA {cap!r}; known: {', '.join(k.upper() for k in ISA_RANK)}")
    return sorted(k for k in set(kernels) if (i := kernel_isa(k)) is not None and ISA_RANK[i] > limit)


def _text(value: Any) -> Any:
    if hasattr(value, "get_type_name"):  # openvino.Type: f32, bf16
        return value.get_type_name()
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value).rsplit(".", 1)[-1]  # ExecutionMode.PERFORMANCE -> PERFORMANCE


def runtime_properties(compiled: Any) -> dict[str, Any]:
    """What the compiled model reports, its kernels' instruction sets, the CPU's flags and any ISA cap."""

    def prop(name: str) -> Any:
        try:
            return _text(compiled.get_property(name))
        except RuntimeError:  # a property this plugin does not report
            return None

    kernels: list[str] = []
    for op in compiled.get_runtime_model().get_ops():
        info = op.get_rt_info()
        if "primitiveType" in info:
            kernels.append(str(info["primitiveType"].astype(str)))
    return {
        "inference_precision": prop("INFERENCE_PRECISION_HINT"),
        "execution_mode": prop("EXECUTION_MODE_HINT"),
        "threads": prop("INFERENCE_NUM_THREADS"),
        "streams": prop("NUM_STREAMS"),
        "performance_hint": prop("PERFORMANCE_HINT"),
        "requested": dict(COMPILE_CONFIG),
        "onednn_max_cpu_isa": os.environ.get(ISA_ENV),
        **isa_summary(kernels),
        "cpu": cpu_flags(),
    }
