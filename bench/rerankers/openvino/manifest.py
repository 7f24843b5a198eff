"""The quantised folder's manifest and its check (plan section "OpenVINO int8 variant").

Recorded: source model and revision, calibration-set SHA-256, the quantisation configuration (with the
overflow fix used), openvino / nncf / optimum-intel / transformers versions, the SHA-256 of every produced
file, the CPU flags that decide int8 speed and accuracy, and the inference precision the folder is compiled
with (``inference_precision``, D-037). ``verify_folder`` refuses a folder whose files do not match the
manifest, a manifest without that precision (made before it was pinned) or with another one, and an installed
OpenVINO stack other than the locked one.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic
from bench.core import clock
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.paths import int8_model_dir
from bench.integrity.hashing import sha256_file
from bench.rerankers.openvino.config import (
    BF16_FLAGS,
    INFERENCE_PRECISION,
    INT8_CPU_FLAGS,
    PINNED_PACKAGES,
    RECORDED_PACKAGES,
    VNNI_FLAGS,
    QuantSpec,
    Task,
)

MANIFEST = "int8-manifest.json"
# how the author remakes the study's quantised folder, in the container (README's phase table: bench-cpu)
REMAKE = hint("int8 quantize")


def default_folder() -> Path:
    """Where ``bench int8 quantize`` writes and the ``bge-v2-m3-int8`` adapter reads (git-ignored):
    :func:`bench.core.paths.int8_model_dir`, which the reranker registry reads too."""
    return int8_model_dir()


def installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_pins(versions: dict[str, str | None] | None = None) -> None:
    """Refuse an OpenVINO stack other than the locked one (uv.lock)."""
    found = versions if versions is not None else {n: installed(n) for n in PINNED_PACKAGES}
    wrong = [f"{n} {found.get(n)} (locked: {v})" for n, v in PINNED_PACKAGES.items() if found.get(n) != v]
    if wrong:
        raise BenchError(
            f"uv.lock pins {', '.join(f'{n}=={v}' for n, v in PINNED_PACKAGES.items())}, installed: "
            f"{'; '.join(wrong)}. Run `uv sync --locked` (int8 results are tied to these versions)."
        )


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """Presence of each flag in ``INT8_CPU_FLAGS`` and whether any VNNI instruction set is there."""
    flags: set[str] = set()
    model = None
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "flags" and not flags:
                flags = set(value.split())
            elif key.strip() == "model name" and model is None:
                model = value.strip()
    except OSError:
        unread = f"{cpuinfo} unreadable"
        return {"cpu_model": None, "flags": None, "vnni": None, "bf16": None, "source": unread}
    present = {f: f in flags for f in INT8_CPU_FLAGS}
    return {
        "cpu_model": model,
        "flags": present,
        "vnni": any(present[f] for f in VNNI_FLAGS),
        "bf16": any(present[f] for f in BF16_FLAGS),
        "source": str(cpuinfo),
    }


def file_hashes(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def write_manifest(
    folder: Path,
    *,
    task: Task,
    spec: QuantSpec,
    max_length: int,
    calibration_samples: int,
    record: dict[str, Any],
    calibration_samples_used: int | None = None,
) -> dict[str, Any]:
    manifest = {
        "kind": "openvino-int8",
        "utc": clock.utc_iso(),
        "task": task,
        "max_length": max_length,
        "quantization": spec.to_dict(),
        "overflow_fix": spec.overflow_fix,
        "inference_precision": INFERENCE_PRECISION,
        "calibration_samples": calibration_samples,
        "calibration_samples_used": calibration_samples_used,
        "packages": {n: installed(n) for n in RECORDED_PACKAGES},
        "cpu": cpu_flags(),
        "files": file_hashes(folder),
        **record,
    }
    write_json_atomic(folder / MANIFEST, manifest)
    return manifest


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.is_file():
        raise BenchError(f"{path}: no int8 manifest; this is not a folder written by `bench int8 quantize`")
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchError(f"{path}: not valid JSON ({exc}); quantise again") from exc
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict) or "quantization" not in data:
        raise BenchError(f"{path}: lacks 'files' or 'quantization'; quantise again")
    if "inference_precision" not in data:
        raise BenchError(
            f"{path}: no 'inference_precision' (made before the precision was pinned to "
            f"{INFERENCE_PRECISION}); quantise again: `{REMAKE} --out {path.parent}` (the rehearsal "
            "remakes its stand-in by itself)"
        )
    if data["inference_precision"] != INFERENCE_PRECISION:
        raise BenchError(
            f"{path}: inference precision {data['inference_precision']!r}, this code compiles int8 models "
            f"with {INFERENCE_PRECISION!r}; quantise again: `{REMAKE} --out {path.parent}`"
        )
    return data


def verify_folder(folder: Path) -> dict[str, Any]:
    """The manifest, after checking the OpenVINO pins, the packages it was made with and every file hash."""
    check_pins()
    manifest = read_manifest(folder)
    made = {n: manifest["packages"].get(n) for n in PINNED_PACKAGES}
    try:
        check_pins(made)
    except BenchError as exc:
        raise BenchError(f"{folder / MANIFEST}: made with other versions: {exc.message}") from None
    expected: dict[str, str] = manifest["files"]
    actual = file_hashes(folder)
    for name in sorted(set(expected) | set(actual)):
        if name not in actual:
            raise BenchError(f"{folder / name}: listed in {MANIFEST} but missing; quantise again")
        if name not in expected:
            raise BenchError(f"{folder / name}: not listed in {MANIFEST}; remove it or quantise again")
        if actual[name] != expected[name]:
            raise BenchError(
                f"{folder / name}: SHA-256 {actual[name]} differs from {MANIFEST} ({expected[name]}); "
                "the quantised model was changed after quantisation: quantise again"
            )
    return manifest
