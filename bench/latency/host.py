"""Host state before and after every latency block (plan section "Latency"; the issue's list: load
average, CPU frequency where readable, free memory, torch and OpenMP thread counts, CPU affinity, GPU
clocks/temperature/power on GPU runs) and the busy-host rule.

Keys of ``host_state`` (each always present, null where unreadable): ``utc``, ``load1``, ``load5``,
``load15``, ``cpu_count``, ``affinity`` (CPU ids this process may run on), ``cpu_mhz``
(``{"min", "mean", "max"}`` over the affinity CPUs, from cpufreq or /proc/cpuinfo), ``mem_available_bytes``,
``mem_total_bytes``, ``torch_threads``, ``torch_interop_threads`` (only when torch is already imported),
``env_threads`` (OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS as set), ``gpu`` (a list per
device, see ``bench.latency.gpu``, or null), ``foreign`` (the CPU other processes used over a short window,
see below).

Busy host: a block is refused (unless ``--allow-busy``; then it runs and the block carries a mark saying so)
when, over the ``FOREIGN_WINDOW_S`` before it starts, processes other than ours used more than half the
machine's cores. The host-wide load average cannot judge this between blocks of one run (issue 20): the
previous block's own threads keep it high for minutes, so on the 8-vCPU server most blocks would be refused
or marked. Other processes' CPU is the host's busy CPU time (``/proc/stat`` through psutil: user, nice,
system, irq, softirq, steal) minus the CPU time of this process and its descendants (psutil), both read
at the start and the end of the window. ``/proc/stat`` is host-wide also inside the container, whose own
process list shows none of the host's other processes. The load average stays in the record.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from bench import clock
from bench.errors import BenchError

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
FOREIGN_WINDOW_S: Final = 1.0  # seconds before (and after) each block over which other processes' CPU is read
BUSY_FIELDS: Final = ("user", "nice", "system", "irq", "softirq", "steal")  # of /proc/stat; guest is in user
FOREIGN_METHOD: Final = (
    "host busy CPU time (/proc/stat user+nice+system+irq+softirq+steal, psutil.cpu_times) minus the CPU time "
    "of this process and its descendants (psutil), over the window"
)


def system_busy_seconds() -> float:
    """CPU seconds the whole host has spent busy since boot (all CPUs)."""
    import psutil

    times = psutil.cpu_times()
    return float(sum(getattr(times, name, 0.0) for name in BUSY_FIELDS))


def own_cpu_seconds() -> float:
    """CPU seconds of this process (all its threads) and its descendants, reaped ones included."""
    import psutil

    me = psutil.Process()
    procs = [me]
    try:
        procs += me.children(recursive=True)
    except psutil.Error:
        pass
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
        except psutil.Error:  # a child that ended in between: its time moves to its parent's children_*
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def measure_foreign_load(
    window_s: float = FOREIGN_WINDOW_S,
    *,
    wait: Callable[[float], object] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    system: Callable[[], float] = system_busy_seconds,
    own: Callable[[], float] = own_cpu_seconds,
) -> dict[str, Any]:
    """The CPU other processes used over ``window_s`` (``wait`` spends the window; ``clock`` times it)."""
    t0, busy0, own0 = clock(), system(), own()
    wait(window_s)
    t1, busy1, own1 = clock(), system(), own()
    span = t1 - t0
    all_cpu, own_cpu = busy1 - busy0, own1 - own0
    foreign = max(0.0, all_cpu - own_cpu)  # tick rounding (10 ms) can make the difference slightly negative
    return {
        "window_s": span,
        "cpu_s": foreign,
        "cores": foreign / span if span > 0 else None,
        "own_cpu_s": own_cpu,
        "host_busy_cpu_s": all_cpu,
        "method": FOREIGN_METHOD,
    }


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


def host_state(
    gpu: Callable[[], list[dict[str, Any]]] | None = None,
    foreign: Callable[[], dict[str, Any]] | None = measure_foreign_load,
) -> dict[str, Any]:
    """A snapshot of the host (keys in the module docstring); ``foreign`` spends its window first."""
    try:
        other = foreign() if foreign is not None else None
    except Exception as exc:  # psutil missing or /proc unreadable: recorded, and the busy rule refuses
        other = {"error": f"{type(exc).__name__}: {exc}", "cores": None}
    try:
        load1, load5, load15 = os.getloadavg()
    except OSError:
        load1 = load5 = load15 = None  # type: ignore[assignment]
    affinity = _affinity()
    torch = sys.modules.get("torch")
    return {
        "utc": clock.utc_iso("milliseconds"),
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
        "foreign": other,
    }


def busy_limit(state: Mapping[str, Any]) -> float:
    """Half the machine's cores: the most CPU (in cores) other processes may use before a block starts."""
    return float(state.get("cpu_count") or 1) / 2.0


def busy_mark(
    state: Mapping[str, Any], *, allow_busy: bool, what: str, limit: float | None = None
) -> str | None:
    """None on a quiet host; a mark when busy and ``allow_busy``; BenchError when busy otherwise.

    Judged by ``state["foreign"]`` (other processes' CPU over the window, :func:`measure_foreign_load`),
    never by the load average, which our own threads raise; ``limit`` (cores) defaults to half the cores."""
    rule = "half the cores" if limit is None else "the limit"
    limit = busy_limit(state) if limit is None else limit
    foreign = state.get("foreign")
    cores = foreign.get("cores") if isinstance(foreign, Mapping) else None
    load1 = state.get("load1")
    load = f"; 1-minute load average {load1:.2f}, ours included" if isinstance(load1, int | float) else ""
    if not isinstance(cores, int | float):
        message = (
            f"host load not judged at the start of {what}: the CPU time of other processes could not be "
            f"read{load}"
        )
    elif cores <= limit:
        return None
    else:
        message = (
            f"host busy at the start of {what}: other processes used {cores:.2f} cores over "
            f"{foreign['window_s']:.1f} s > {limit:g} ({rule}){load}"  # type: ignore[index]
        )
    if not allow_busy:
        raise BenchError(f"{message}; wait until the machine is idle, or pass --allow-busy (recorded).")
    return message + "; measured anyway (--allow-busy)"
