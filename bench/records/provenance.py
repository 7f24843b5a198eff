"""The manifest every result records: code, packages, host, device, hashes of plan, deviations and lock.

Plan sections: Reproducibility and licences; Latency (`lscpu`, torch threads, `nvidia-smi` clocks recorded).
STYLE: record what others leave out (package versions, git commit plus a dirty flag, device, dtype, server
version, dataset hashes). The ``git`` record also holds the code digest (``bench.records.codeversion``): the
measurement rule compares code, and the whole tree's dirty flag and paths are kept for information.
Every field is always present (null when unknown), so manifests compare field by field.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.core import clock
from bench.core.errors import BenchError
from bench.core.paths import repo_root
from bench.integrity import git, timestamps
from bench.integrity.datalock import LOCK_NAME
from bench.integrity.hashing import sha256_file
from bench.records import codeversion
from bench.records.codeversion import code_record

__all__ = ["collect_manifest", "sha256_file"]

PACKAGES = ("numpy", "torch", "transformers", "sentence-transformers", "huggingface-hub", "opentimestamps")
NVIDIA_SMI_QUERY = (
    "name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,"
    "power.draw,pstate"
)


def _run(cmd: list[str], timeout: float = 10.0) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _torch_info() -> dict[str, Any]:
    """Torch threads and CUDA device, only if torch is already imported (never imported just for this)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {"torch_threads": None, "cuda_device": None, "cuda_version": None}
    cuda = bool(torch.cuda.is_available())
    return {
        "torch_threads": int(torch.get_num_threads()),
        "cuda_device": torch.cuda.get_device_name(0) if cuda else None,
        "cuda_version": getattr(torch.version, "cuda", None),
    }


def torch_settings() -> dict[str, Any]:
    """What decides which GPU kernels run, read only if torch is already imported: TF32 for matmul and cuDNN,
    float32 matmul precision, the scaled-dot-product-attention backends enabled, and ``CUDA_MODULE_LOADING``
    (unset: torch sets LAZY when CUDA starts, and a kernel first needed by a new shape then loads inside a
    measured call; ``bench latency gpu`` sets EAGER)."""
    torch = sys.modules.get("torch")
    out: dict[str, Any] = {"cuda_module_loading": os.environ.get("CUDA_MODULE_LOADING")}
    if torch is None:
        return {**out, "torch_imported": False}
    cuda = torch.backends.cuda
    return {
        **out,
        "torch_imported": True,
        "tf32_matmul": bool(cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": str(torch.get_float32_matmul_precision()),
        "sdpa_backends": {
            "flash": bool(cuda.flash_sdp_enabled()),
            "mem_efficient": bool(cuda.mem_efficient_sdp_enabled()),
            "cudnn": bool(cuda.cudnn_sdp_enabled()),
            "math": bool(cuda.math_sdp_enabled()),
        },
    }


def attention_implementations(adapter: Any) -> list[str] | None:
    """The attention implementations (transformers' ``config._attn_implementation``: "sdpa", "eager",
    "flash_attention_2", ...) of every model inside a loaded adapter's ``model``; None where it has none."""
    model = getattr(adapter, "model", None)
    modules = getattr(model, "modules", None)
    if not callable(modules):
        return None
    found = {
        str(impl)
        for m in modules()
        if (impl := getattr(getattr(m, "config", None), "_attn_implementation", None)) is not None
    }
    return sorted(found) or None


def _sha(path: Path) -> str | None:
    return sha256_file(path) if path.is_file() else None


def _git(root: Path) -> dict[str, Any]:
    commit = git.head_commit(root)
    if commit is None:
        return {"commit": None, "dirty": None, "dirty_paths": None, **code_record(root)}
    dirty = git.dirty_paths(root)
    return {"commit": commit, "dirty": bool(dirty), "dirty_paths": dirty[:50], **code_record(root)}


def host_info() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "lscpu": _run(["lscpu"]),
        "nvidia_smi": _run(["nvidia-smi", f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv"]),
        **_torch_info(),
    }


def collect_manifest(
    *,
    kind: str,
    device: str | None = None,
    dtype: str | None = None,
    server_version: str | None = None,
    extra: Mapping[str, Any] | None = None,
    root: Path | None = None,
) -> dict[str, Any]:
    """A JSON-serialisable record of everything a result depends on besides its inputs' contents."""
    root = root or repo_root()
    try:
        stamp: dict[str, Any] = (
            dict(timestamps.plan_stamp_status(root)) if (root / "PLAN.md").is_file() else {}
        )
    except BenchError as exc:  # e.g. an unreadable merkle-roots file: record it, the guard refuses separately
        stamp = {"verdict": "error", "detail": exc.message}
    manifest: dict[str, Any] = {
        "kind": kind,
        "utc": clock.utc_iso(),
        "git": _git(root),
        "python": platform.python_version(),
        "packages": {name: _version(name) for name in PACKAGES},
        "host": host_info(),
        "device": device,
        "dtype": dtype,
        "server_version": server_version,
        "plan_sha256": _sha(root / "PLAN.md"),
        "deviations_sha256": _sha(root / "DEVIATIONS.md"),
        "datasets_lock_sha256": _sha(root / LOCK_NAME),
        "timestamp": stamp,
        "torch_settings": torch_settings(),
        "extra": dict(extra) if extra is not None else {},
    }
    return manifest


def require_clean_tree(root: Path | None = None) -> dict[str, Any]:
    """The former name of the measurement rule, kept for callers written before it changed: the same as
    ``bench.records.codeversion.require_clean_code`` (only the code paths must be clean; outputs never
    count)."""
    return codeversion.require_clean_code(root or repo_root())
