"""Host state before and after every latency block (plan section "Latency"; the issue's list: load
average, CPU frequency where readable, free memory, torch and OpenMP thread counts, CPU affinity, GPU
clocks/temperature/power on GPU runs) and the busy-host rule.

Keys of ``host_state`` (each always present, null where unreadable): ``utc``, ``load1``, ``load5``,
``load15``, ``cpu_count``, ``affinity`` (CPU ids this process may run on), ``cpu_mhz``
(``{"min", "mean", "max"}`` over the affinity CPUs, from cpufreq or /proc/cpuinfo), ``mem_available_bytes``,
``mem_total_bytes``, ``torch_threads``, ``torch_interop_threads`` (only when torch is already imported),
``env_threads`` (OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS as set), ``gpu`` (a list per
device, see ``bench.latency.gpu``, or null).

Busy host: a block whose start finds the 1-minute load average above half the machine's cores is refused
unless ``--allow-busy``; then it runs and the block carries a mark saying so.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.errors import BenchError

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _affinity() -> list[int] | None:
    if not hasattr(os, "sched_getaffinity"):
        return None
    return sorted(os.sched_getaffinity(0))


def cpu_mhz(
    cpus: list[int] | None, sys_root: Path = Path("/sys/devices/system/cpu")
) -> dict[str, float] | None:
    values: list[float] = []
    for cpu in cpus or []:
        f = sys_root / f"cpu{cpu}" / "cpufreq" / "scaling_cur_freq"
        try:
            values.append(int(f.read_text().strip()) / 1000.0)  # kHz
        except (OSError, ValueError):
            continue
    if not values:
        try:
            lines = Path("/proc/cpuinfo").read_text().splitlines()
        except OSError:
            lines = []
        all_mhz = [float(ln.split(":", 1)[1]) for ln in lines if ln.startswith("cpu MHz")]
        wanted = set(cpus) if cpus else None
        values = [v for i, v in enumerate(all_mhz) if wanted is None or i in wanted] or all_mhz
    if not values:
        return None
    return {"min": min(values), "mean": sum(values) / len(values), "max": max(values)}


def _meminfo() -> dict[str, int | None]:
    out: dict[str, int | None] = {"mem_available_bytes": None, "mem_total_bytes": None}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in ("MemAvailable", "MemTotal"):
                key = "mem_available_bytes" if name == "MemAvailable" else "mem_total_bytes"
                out[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def host_state(gpu: Callable[[], list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """A snapshot of the host (keys in the module docstring)."""
    try:
        load1, load5, load15 = os.getloadavg()
    except OSError:
        load1 = load5 = load15 = None  # type: ignore[assignment]
    affinity = _affinity()
    torch = sys.modules.get("torch")
    return {
        "utc": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "load1": load1,
        "load5": load5,
        "load15": load15,
        "cpu_count": os.cpu_count(),
        "affinity": affinity,
        "cpu_mhz": cpu_mhz(affinity),
        **_meminfo(),
        "torch_threads": int(torch.get_num_threads()) if torch is not None else None,
        "torch_interop_threads": int(torch.get_num_interop_threads()) if torch is not None else None,
        "env_threads": {k: os.environ[k] for k in THREAD_ENV if k in os.environ},
        "gpu": gpu() if gpu is not None else None,
    }


def busy_limit(state: Mapping[str, Any]) -> float:
    """Half the machine's cores: the largest 1-minute load average a block may start at."""
    return float(state.get("cpu_count") or 1) / 2.0


def busy_mark(state: Mapping[str, Any], *, allow_busy: bool, what: str) -> str | None:
    """None on a quiet host; a mark when busy and ``allow_busy``; BenchError when busy otherwise."""
    load1 = state.get("load1")
    limit = busy_limit(state)
    if load1 is None or load1 <= limit:
        return None
    message = (
        f"host busy at the start of {what}: 1-minute load average {load1:.2f} > {limit:g} (half the cores)"
    )
    if not allow_busy:
        raise BenchError(f"{message}; wait until the machine is idle, or pass --allow-busy (recorded).")
    return message + "; measured anyway (--allow-busy)"
