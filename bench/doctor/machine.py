"""The one seam between ``bench doctor``'s checks and the machine: everything a check reads about this
machine (interpreter, installed packages, disk, memory, NVML, torch, Typesense, other interpreters) is a
field here. ``Machine.here()`` reads the real machine; tests replace single fields (``dataclasses.replace``)
to show a machine this one is not: an older driver, a full disk, another package set."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import httpx

from bench.core import paths
from bench.core.errors import BenchError
from bench.firststage.server import shown_body


class Unreadable(Exception):
    """A reading the machine cannot give (no NVML, no nvidia-smi, no torch): the message says why."""


@dataclass(frozen=True)
class NvmlReading:
    driver: str  # e.g. "580.95.05"
    gpus: tuple[str, ...]  # device names
    source: str  # "NVML" or "nvidia-smi"


@dataclass(frozen=True)
class TorchReading:
    version: str
    cuda: str | None  # torch.version.cuda: the CUDA torch was built for, None for a CPU build
    available: bool  # torch.cuda.is_available()
    devices: tuple[str, ...]
    capability: tuple[int, int] | None  # of device 0
    arch_list: tuple[str, ...]  # torch.cuda.get_arch_list()


def normalise(name: str) -> str:
    """A distribution name as uv.lock writes it (PEP 503: lower case, runs of -_. as one -)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_distributions() -> dict[str, str]:
    """name -> version of every distribution installed in this interpreter's environment: its site-packages
    only, not whatever else is on ``sys.path`` (setuptools puts its vendored packages' metadata there once it
    is imported, e.g. by torch: they are not installed, and counted they made the check depend on import
    order). Read once per state of those folders (:func:`_distributions`); each call gets its own dict."""
    paths = sysconfig.get_paths()
    where = list(dict.fromkeys(p for p in (paths.get("purelib"), paths.get("platlib")) if p))
    return dict(_distributions(tuple((p, _mtime_ns(p)) for p in where)))


def _mtime_ns(folder: str) -> int | None:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


@functools.lru_cache(maxsize=4)
def _distributions(where: tuple[tuple[str, int | None], ...]) -> Mapping[str, str]:
    """:func:`installed_distributions` of the folders of ``where``, kept per (folder, modification time):
    installing, removing or upgrading a distribution adds or removes its ``*.dist-info`` folder there, which
    changes the folder's modification time."""
    out: dict[str, str] = {}
    for dist in importlib.metadata.distributions(path=[p for p, _ in where]):
        name, version = _name_and_version(dist)
        if name:
            out.setdefault(normalise(name), version)
    return MappingProxyType(out)


def _name_and_version(dist: importlib.metadata.Distribution) -> tuple[str | None, str]:
    """``dist.metadata["Name"]`` and ``dist.version`` from the metadata's header lines alone, where both are
    plain one-line headers there (an e-mail parse of the whole file each, long descriptions included, was
    most of the reading); else from importlib.metadata's own parse."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    found: dict[str, str] = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            break
        key, colon, value = line.partition(":")
        if colon and key in ("Name", "Version") and key not in found:
            if i + 1 < len(lines) and lines[i + 1][:1] in (" ", "\t"):
                found.clear()  # a folded header: importlib.metadata's parse joins its lines
                break
            found[key] = value.lstrip(" \t").rstrip("\r")
    if len(found) == 2:
        return found["Name"], found["Version"]
    return dist.metadata["Name"], dist.version


def read_nvml() -> NvmlReading:
    """The driver version and the GPUs from NVML, else from ``nvidia-smi``; ``Unreadable`` naming both."""
    try:
        # lazy: NVML (nvidia-ml-py) is needed only on a GPU machine
        import pynvml

        pynvml.nvmlInit()
        try:
            driver = pynvml.nvmlSystemGetDriverVersion()
            names = tuple(
                str(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i)))
                for i in range(pynvml.nvmlDeviceGetCount())
            )
        finally:
            pynvml.nvmlShutdown()
        return NvmlReading(str(driver), names, "NVML")
    except Exception as exc:  # NVMLError_LibraryNotFound and friends, or no pynvml at all
        nvml_error = f"{type(exc).__name__}: {exc}".strip()
    smi = shutil.which("nvidia-smi")
    if smi is None:
        raise Unreadable(f"NVML cannot be read ({nvml_error}) and nvidia-smi is not on PATH")
    try:
        proc = subprocess.run(
            [smi, "--query-gpu=driver_version,name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise Unreadable(f"NVML cannot be read ({nvml_error}) and nvidia-smi failed ({exc})") from exc
    rows = [[c.strip() for c in ln.split(",", 1)] for ln in proc.stdout.splitlines() if ln.strip()]
    if not rows:
        raise Unreadable(f"NVML cannot be read ({nvml_error}) and nvidia-smi lists no GPU")
    return NvmlReading(rows[0][0], tuple(r[-1] for r in rows), "nvidia-smi")


def read_torch() -> TorchReading:
    try:
        # lazy: torch takes seconds to import; only the GPU checks need it
        import torch
    except ImportError as exc:
        raise Unreadable(f"torch cannot be imported ({exc})") from exc
    available = bool(torch.cuda.is_available())
    devices = (
        tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())) if available else ()
    )
    cap = tuple(torch.cuda.get_device_capability(0)) if available else None
    return TorchReading(
        version=str(torch.__version__),
        cuda=torch.version.cuda,
        available=available,
        devices=devices,
        capability=(int(cap[0]), int(cap[1])) if cap else None,
        arch_list=tuple(torch.cuda.get_arch_list()) if available else (),
    )


def typesense_debug(url: str, api_key: str) -> dict[str, Any]:
    """``GET /debug`` of a Typesense server (its version); BenchError naming the URL when it cannot."""
    try:
        resp = httpx.get(f"{url.rstrip('/')}/debug", headers={"X-TYPESENSE-API-KEY": api_key}, timeout=5.0)
    except httpx.HTTPError as exc:
        raise BenchError(f"no answer from {url} ({type(exc).__name__}: {exc})") from exc
    if resp.status_code != 200:
        raise BenchError(f"{url}/debug answered HTTP {resp.status_code}: {shown_body(resp)}")
    try:
        data = resp.json()
    except ValueError as exc:
        raise BenchError(f"{url}/debug did not answer JSON: {shown_body(resp)}") from exc
    return data if isinstance(data, dict) else {}


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes, None where there is none."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def cpu_summary() -> str:
    """CPU model, the flags that matter for the study's numbers, threads usable by this process."""
    model, flags = platform.processor() or "unknown", set[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model in ("unknown", platform.processor()):
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8", "amx_bf16", "avx_vnni")
    have = [f for f in wanted if f in flags]
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"{model}; flags {', '.join(have) or 'none of ' + ', '.join(wanted)}; "
        f"{usable} threads usable of {os.cpu_count()}"
    )


def run_python(python: Path, code: str, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, timeout=120, env=dict(env)
    )


def _disk_free(path: Path) -> int:
    return shutil.disk_usage(path).free


@dataclass(frozen=True)
class Machine:
    root: Path
    env: Mapping[str, str]
    python_version: str
    prefix: Path  # sys.prefix: the environment this interpreter runs in
    distributions: Callable[[], dict[str, str]] = installed_distributions
    markers: Mapping[str, str] = field(default_factory=dict)  # PEP 508 environment (empty: this one's)
    disk_free: Callable[[Path], int] = _disk_free
    memory_available: Callable[[], int | None] = available_memory
    nvml: Callable[[], NvmlReading] = read_nvml
    torch: Callable[[], TorchReading] = read_torch
    matmul: Callable[[], list[tuple[str, float, float]]] | None = None  # None: gpu.gpu_matmul
    attention: Callable[[], list[tuple[str, float, float]]] | None = None  # None: gpu_kernels.gpu_sdpa
    gpu_memory: Callable[[], tuple[int, int]] | None = None  # None: gpu_kernels.read_gpu_memory
    model_weights: Callable[[], dict[str, int]] | None = None  # None: gpu_kernels.read_model_weights
    typesense: Callable[[str, str], dict[str, Any]] = typesense_debug
    probes: Callable[[str, str], Any] | None = None  # None: server_probes.probe_server (a ProbeReport)
    cpu: Callable[[], str] = cpu_summary
    run_python: Callable[[Path, str, Mapping[str, str]], subprocess.CompletedProcess[str]] = run_python

    @classmethod
    def here(cls) -> Machine:
        return cls(
            root=paths.repo_root(),
            env=dict(os.environ),
            python_version=platform.python_version(),
            prefix=Path(sys.prefix),
        )
