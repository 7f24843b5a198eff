"""GPU facts through NVML (PyPI ``nvidia-ml-py``): the fields ``nvidia-smi`` logs (plan section "Latency":
clocks, temperature and power), and the rule that no other process may hold the GPU.

``GpuProbe.sample()`` gives, per device: ``index``, ``name``, ``sm_clock_mhz``, ``mem_clock_mhz``,
``temperature_c``, ``power_w``, ``pstate``, ``utilization_pct``, ``memory_used_mib`` (device-wide: every
process's memory, the allocator's cache and a display included; the process's own peak is torch's, recorded
per block), ``clock_event_reasons`` (NVML's throttle-reason bit mask) and ``clock_event_names`` (its set bits
by name, nvml.h's ``nvmlClocksEventReason*``); a field NVML cannot read is null. The probe takes the NVML
module as an argument so tests drive it with a fake.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.core.errors import BenchError

FIELDS = (
    "sm_clock_mhz",
    "mem_clock_mhz",
    "temperature_c",
    "power_w",
    "pstate",
    "utilization_pct",
    "memory_used_mib",
    "clock_event_reasons",
    "clock_event_names",
)
# nvml.h: nvmlClocksEventReason* (formerly nvmlClocksThrottleReason*) bit values
CLOCK_EVENT_BITS = (
    ("gpu_idle", 0x1),
    ("applications_clocks_setting", 0x2),
    ("sw_power_cap", 0x4),
    ("hw_slowdown", 0x8),
    ("sync_boost", 0x10),
    ("sw_thermal_slowdown", 0x20),
    ("hw_thermal_slowdown", 0x40),
    ("hw_power_brake_slowdown", 0x80),
    ("display_clock_setting", 0x100),
)


def clock_event_names(mask: int | None) -> list[str] | None:
    return None if mask is None else [name for name, bit in CLOCK_EVENT_BITS if mask & bit]


def _clock_reasons(n: Any, handle: Any) -> int | None:
    for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
        fn = getattr(n, name, None)
        if fn is not None:
            value = _safe(fn, handle)
            return int(value) if value is not None else None
    return None


def _safe(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:  # NVML raises NVMLError_NotSupported etc. per field: null, not a crash
        return None


class GpuProbe:
    def __init__(self, nvml_module: Any | None = None) -> None:
        nvml: Any = nvml_module
        if nvml is None:
            try:
                # lazy: pynvml: NVIDIA only, absent on CPU machines
                import pynvml

                nvml = pynvml
            except ModuleNotFoundError:
                raise BenchError(
                    "GPU telemetry needs PyPI nvidia-ml-py (bench group): run `uv sync`."
                ) from None
        self.nvml = nvml
        try:
            nvml.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            raise BenchError(
                f"NVML could not start ({type(exc).__name__}: {exc}); the GPU driver is not reachable "
                "from here. Run on the GPU machine (container started with the GPU)."
            ) from None
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]

    def close(self) -> None:
        _safe(self.nvml.nvmlShutdown)

    def sample(self) -> list[dict[str, Any]]:
        n = self.nvml
        out = []
        for i, h in enumerate(self.handles):
            name = _safe(n.nvmlDeviceGetName, h)
            power = _safe(n.nvmlDeviceGetPowerUsage, h)
            mem = _safe(n.nvmlDeviceGetMemoryInfo, h)
            util = _safe(n.nvmlDeviceGetUtilizationRates, h)
            reasons = _clock_reasons(n, h)
            out.append(
                {
                    "index": i,
                    "name": name.decode() if isinstance(name, bytes) else name,
                    "sm_clock_mhz": _safe(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM),
                    "mem_clock_mhz": _safe(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM),
                    "temperature_c": _safe(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU),
                    "power_w": power / 1000.0 if power is not None else None,
                    "pstate": _safe(n.nvmlDeviceGetPerformanceState, h),
                    "utilization_pct": getattr(util, "gpu", None),
                    "memory_used_mib": mem.used / 2**20 if mem is not None else None,
                    "clock_event_reasons": reasons,
                    "clock_event_names": clock_event_names(reasons),
                }
            )
        return out

    def compute_processes(self) -> list[dict[str, Any]]:
        """Processes holding a CUDA context on any device (pid, device, used memory in MiB)."""
        out = []
        for i, h in enumerate(self.handles):
            for p in _safe(self.nvml.nvmlDeviceGetComputeRunningProcesses, h) or []:
                used = getattr(p, "usedGpuMemory", None)
                out.append({"device": i, "pid": p.pid, "used_mib": used / 2**20 if used else None})
        return out


def require_free_gpu(probe: GpuProbe, own_pids: frozenset[int] = frozenset()) -> None:
    """Refuse when another process holds a CUDA context. Called before this process touches CUDA, so every
    listed process is another's (NVML in a container may show host pids; ``own_pids`` is a courtesy)."""
    others = [p for p in probe.compute_processes() if p["pid"] not in own_pids]
    if others:
        shown = ", ".join(f"pid {p['pid']} on GPU {p['device']}" for p in others[:5])
        raise BenchError(
            f"another process holds the GPU ({shown}); the plan times an idle GPU. Stop it (nvidia-smi lists "
            "it) and start again."
        )
