"""Host state before and after every latency block (plan section "Latency"; the list recorded: load
average, CPU frequency where readable, free memory, torch and OpenMP thread counts, CPU affinity, GPU
clocks/temperature/power on GPU runs) and the busy-host rule.

Keys of ``host_state`` (each always present, null where unreadable): ``utc``, ``load1``, ``load5``,
``load15``, ``cpu_count``, ``affinity`` (CPU ids this process may run on), ``cpu_mhz``
(``{"min", "mean", "max"}`` over the affinity CPUs, from cpufreq or /proc/cpuinfo), ``mem_available_bytes``,
``mem_total_bytes``, ``torch_threads``, ``torch_interop_threads`` (only when torch is already imported),
``env_threads`` (OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS as set), ``gpu`` (a list per
device, see ``bench.latency.gpu``, or null), ``cpu_counters`` (``monotonic_s``, ``host_busy_cpu_s``,
``own_cpu_s`` at the snapshot, ``own_read_spread_cpu_s``, or ``error``; see ``read_counters``), ``foreign``
(the CPU other processes used over the window
before the run, or over the block for ``host_after`` of a block; null in a block's ``host_before``; see
below).

Busy host: other processes' CPU is judged, never the load average, which our own
threads raise between the blocks of one run (on the 8-vCPU server most blocks would be refused or marked).
Other processes' CPU is the host's busy CPU time (``/proc/stat`` through psutil: user, nice, system, irq,
softirq, steal) minus the CPU time of this process and its descendants (psutil). Every snapshot carries both
counters (``cpu_counters``, read in microseconds, no waiting), so the rule costs nothing per block:

- once before the run, over ``FOREIGN_WINDOW_S`` (``measure_foreign_load``; the run is refused before
  anything is measured when other processes used more than half the cores);
- over every block itself, from the counters of its two snapshots (``foreign_over``): a block during which
  other processes used more than half the cores is refused and not written (unless ``--allow-busy``; then it
  is written with a mark saying so).

``/proc/stat`` is host-wide also inside the container, whose own process list shows none of the host's
other processes. The load average stays in the record.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import psutil

from analysis.core.floatsum import ltr_mean, ltr_sum
from bench.core import clock
from bench.core.errors import BenchError

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
FOREIGN_WINDOW_S: Final = (
    1.0  # seconds before a run over which other processes' CPU is read (blocks: the block)
)
BUSY_FIELDS: Final = ("user", "nice", "system", "irq", "softirq", "steal")  # of /proc/stat; guest is in user
FOREIGN_METHOD: Final = (
    "host busy CPU time (/proc/stat user+nice+system+irq+softirq+steal, psutil.cpu_times) minus the CPU time "
    "of this process and its descendants (psutil), over the window"
)
CounterFn = Callable[[], float]


def system_busy_seconds() -> float:
    """CPU seconds the whole host has spent busy since boot (all CPUs)."""
    times = psutil.cpu_times()
    return ltr_sum(float(getattr(times, name, 0.0)) for name in BUSY_FIELDS)


def own_cpu_seconds() -> float:
    """CPU seconds of this process (all its threads) and its descendants, reaped ones included."""
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


def read_counters(
    *, clock: CounterFn = time.monotonic, system: CounterFn | None = None, own: CounterFn | None = None
) -> dict[str, float]:
    """The host's busy CPU seconds and ours, now (no waiting): ``{"monotonic_s", "host_busy_cpu_s",
    "own_cpu_s", "own_read_spread_cpu_s"}``. ``system`` and ``own`` default to this module's functions, looked
    up at the call.

    The two counters cannot be read at one instant, and our own busy threads keep running between the reads
    (on a loaded host a read can be preempted for tens of ms). So ours is read on both sides of the host's:
    ``own_cpu_s`` is the midpoint, and ``own_read_spread_cpu_s`` (what we used while the host's counter was
    read) bounds, halved, how far that midpoint can be from ours at the host's reading."""
    system = system if system is not None else system_busy_seconds
    own = own if own is not None else own_cpu_seconds
    monotonic_s, own_before = clock(), own()
    host_busy = system()
    own_after = own()
    return {
        "monotonic_s": monotonic_s,
        "host_busy_cpu_s": host_busy,
        "own_cpu_s": (own_before + own_after) / 2.0,
        "own_read_spread_cpu_s": own_after - own_before,
    }


def foreign_between(start: Mapping[str, Any], end: Mapping[str, Any], *, over: str) -> dict[str, Any]:
    """The CPU other processes used between two ``read_counters`` readings (``over``: what the span is)."""
    span = float(end["monotonic_s"]) - float(start["monotonic_s"])
    all_cpu = float(end["host_busy_cpu_s"]) - float(start["host_busy_cpu_s"])
    own_cpu = float(end["own_cpu_s"]) - float(start["own_cpu_s"])
    foreign = max(0.0, all_cpu - own_cpu)  # tick rounding (10 ms) can make the difference slightly negative
    # how far ``foreign`` can be off because ours and the host's were read apart (readings without the spread,
    # from before it was recorded, give None: unknown, not 0)
    spreads = [r.get("own_read_spread_cpu_s") for r in (start, end)]
    read_skew = None if None in spreads else (float(spreads[0]) + float(spreads[1])) / 2.0  # type: ignore[arg-type]
    # CPU times come in 10 ms ticks per thread and CPU: over a span shorter than the window a tick or two of
    # rounding would read as cores busy, so a short span (a fast block) is judged as one window
    judged = max(span, FOREIGN_WINDOW_S)
    return {
        "window_s": span,
        "judged_over_s": judged,
        "cpu_s": foreign,
        "cores": foreign / judged,
        "own_cpu_s": own_cpu,
        "host_busy_cpu_s": all_cpu,
        "read_skew_cpu_s": read_skew,
        "over": over,
        "method": FOREIGN_METHOD,
    }


def measure_foreign_load(
    window_s: float | None = None,
    *,
    wait: Callable[[float], object] = time.sleep,
    clock: CounterFn = time.monotonic,
    system: CounterFn | None = None,
    own: CounterFn | None = None,
) -> dict[str, Any]:
    """The CPU other processes used over ``window_s`` (default ``FOREIGN_WINDOW_S``; ``wait`` spends the
    window; ``clock`` times it). Spent once before a run; a block is judged by its own counters."""
    window_s = FOREIGN_WINDOW_S if window_s is None else window_s
    start = read_counters(clock=clock, system=system, own=own)
    wait(window_s)
    end = read_counters(clock=clock, system=system, own=own)
    return foreign_between(start, end, over=f"a {window_s:g} s window before the run")


def foreign_over(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """Other processes' CPU over a block, from the ``cpu_counters`` of its two snapshots (``cores`` None,
    with the error, when either could not be read: the busy rule then refuses)."""
    start, end = before.get("cpu_counters"), after.get("cpu_counters")
    for c in (start, end):
        if not isinstance(c, Mapping) or "error" in c or "monotonic_s" not in c:
            why = c.get("error") if isinstance(c, Mapping) else None
            return {
                "error": why or "no CPU counters in the host snapshot",
                "cores": None,
                "over": "the block",
            }
    return foreign_between(start, end, over="the block")  # type: ignore[arg-type]


def _counters() -> dict[str, Any]:
    try:
        return read_counters()
    except Exception as exc:  # psutil missing or /proc unreadable: recorded, and the busy rule refuses
        return {"error": f"{type(exc).__name__}: {exc}"}


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
    return {"min": min(values), "mean": ltr_mean(values), "max": max(values)}


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
    """A snapshot of the host (keys in the module docstring); ``foreign`` spends its window first (None: no
    window, ``foreign`` null; a block's snapshots, judged by ``foreign_over``)."""
    try:
        other = foreign() if foreign is not None else None
    except Exception as exc:  # psutil missing or /proc unreadable: recorded, and the busy rule refuses
        other = {"error": f"{type(exc).__name__}: {exc}", "cores": None}
    counters = _counters()
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
        "cpu_counters": counters,
        "foreign": other,
    }


def snapshot(gpu: Callable[[], list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """``host_state`` without the window: what a block records at its start and its end."""
    return host_state(gpu, foreign=None)


def busy_limit(state: Mapping[str, Any]) -> float:
    """Half the machine's cores: the most CPU (in cores) other processes may use before a block starts."""
    return float(state.get("cpu_count") or 1) / 2.0


def busy_mark(
    state: Mapping[str, Any],
    *,
    allow_busy: bool,
    what: str,
    limit: float | None = None,
    when: str = "at the start of",
) -> str | None:
    """None on a quiet host; a mark when busy and ``allow_busy``; BenchError when busy otherwise.

    Judged by ``state["foreign"]`` (other processes' CPU over the window before a run, or over a block:
    ``when`` says which, e.g. "during"), never by the load average, which our own threads raise; ``limit``
    (cores) defaults to half the cores."""
    rule = "half the cores" if limit is None else "the limit"
    limit = busy_limit(state) if limit is None else limit
    foreign = state.get("foreign")
    cores = foreign.get("cores") if isinstance(foreign, Mapping) else None
    load1 = state.get("load1")
    load = f"; 1-minute load average {load1:.2f}, ours included" if isinstance(load1, int | float) else ""
    if not isinstance(cores, int | float):
        message = (
            f"host load not judged {when} {what}: the CPU time of other processes could not be read{load}"
        )
    elif cores <= limit:
        return None
    else:
        message = (
            f"host busy {when} {what}: other processes used {cores:.2f} cores over "
            f"{foreign.get('judged_over_s', foreign['window_s']):.1f} s > {limit:g} ({rule}){load}"  # type: ignore[union-attr,index]
        )
    if not allow_busy:
        raise BenchError(f"{message}; wait until the machine is idle, or pass --allow-busy (recorded).")
    return message + "; measured anyway (--allow-busy)"


def judge_before_run(
    what: str, *, allow_busy: bool, state: Callable[[], dict[str, Any]] | None = None
) -> tuple[dict[str, Any], str | None]:
    """The run's one window (``host_state``, ``FOREIGN_WINDOW_S``) before its first block: ``(state, mark)``;
    BenchError (nothing measured, nothing written) when the host is busy and not ``allow_busy``."""
    before = state() if state is not None else host_state()
    return before, busy_mark(before, allow_busy=allow_busy, what=what, when="before")
