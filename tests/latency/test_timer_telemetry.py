"""The CUDA timer with a fake torch.cuda (no GPU here), the refusal without CUDA, the sampler, NVML probe."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from bench.core.errors import BenchError
from bench.latency.gpu import GpuProbe, require_free_gpu
from bench.latency.telemetry import Sampler
from bench.latency.timer import CudaTimer, WallTimer, require_cuda, timer_for


class FakeCuda:
    def __init__(self, available: bool = True, event_ms: float = 12.5) -> None:
        self.available = available
        self.event_ms = event_ms
        self.log: list[str] = []

    def is_available(self) -> bool:
        return self.available

    def synchronize(self) -> None:
        self.log.append("sync")

    def Event(self, enable_timing: bool = False) -> Any:
        assert enable_timing
        cuda = self

        class Ev:
            def record(self) -> None:
                cuda.log.append("record")

            def elapsed_time(self, other: Any) -> float:
                return cuda.event_ms

        return Ev()


def test_cuda_timer_syncs_before_start_and_before_stop() -> None:
    cuda = FakeCuda()

    def work() -> str:
        cuda.log.append("call")
        time.sleep(0.002)
        return "ok"

    result, ns, cuda_ns = CudaTimer(cuda).time(work)
    assert result == "ok" and ns >= 2_000_000 and cuda_ns == 12_500_000
    assert cuda.log == ["sync", "record", "call", "record", "sync"]


def test_cuda_absent_is_refused_with_the_fix() -> None:
    with pytest.raises(BenchError, match=r"torch.cuda.is_available\(\) is False.*bench latency cpu"):
        timer_for("cuda", FakeCuda(available=False))
    assert isinstance(timer_for("cpu"), WallTimer)
    assert require_cuda(FakeCuda()) is not None


def test_sampler_ticks_on_a_fixed_schedule_and_survives_a_failing_probe() -> None:
    def broken() -> float:
        raise OSError("no sensor")

    def slow() -> float:
        time.sleep(0.03)  # a slow probe must not stretch the interval (tick i is due at i * interval)
        return 1.0

    sampler = Sampler({"x": slow, "bad": broken}, interval_s=0.06).start()
    time.sleep(0.6)
    log = sampler.stop()
    ticks = log["samples"]
    # fixed schedule: about 0.6 / 0.06 + 1 ticks; sleeping 0.06 s after each 0.03 s probe would give about 7
    assert 9 <= len(ticks) <= 13, [t["t_s"] for t in ticks]
    assert all(t["t_s"] >= i * 0.06 - 0.002 for i, t in enumerate(ticks[:-1]))  # never before it is due
    assert all(t["x"] == 1.0 and t["bad"] is None for t in ticks)
    assert log["errors"] == {"bad": "OSError: no sensor"}
    assert log["fields"] == ["t_s", "x", "x_t_s", "bad", "bad_t_s"]


class FakeNvml:
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 1, 0

    def __init__(self, procs: list[Any]) -> None:
        self.procs = procs

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return f"h{i}"

    def nvmlDeviceGetName(self, h: str) -> bytes:
        return b"RTX 5070 Ti"

    def nvmlDeviceGetClockInfo(self, h: str, which: int) -> int:
        return 2800 if which == 0 else 14001

    def nvmlDeviceGetTemperature(self, h: str, which: int) -> int:
        return 41

    def nvmlDeviceGetPowerUsage(self, h: str) -> int:
        return 31_500

    def nvmlDeviceGetPerformanceState(self, h: str) -> int:
        raise RuntimeError("NVMLError_NotSupported")

    def nvmlDeviceGetUtilizationRates(self, h: str) -> Any:
        return SimpleNamespace(gpu=3)

    def nvmlDeviceGetMemoryInfo(self, h: str) -> Any:
        return SimpleNamespace(used=512 * 2**20)

    def nvmlDeviceGetComputeRunningProcesses(self, h: str) -> list[Any]:
        return self.procs

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: str) -> int:
        return 0x4 | 0x20  # nvml.h: SwPowerCap, SwThermalSlowdown


def test_nvml_probe_fields_and_busy_gpu_refusal() -> None:
    probe = GpuProbe(FakeNvml([]))
    (dev,) = probe.sample()
    assert dev == {
        "index": 0,
        "name": "RTX 5070 Ti",
        "sm_clock_mhz": 2800,
        "mem_clock_mhz": 14001,
        "temperature_c": 41,
        "power_w": 31.5,
        "pstate": None,
        "utilization_pct": 3,
        "memory_used_mib": 512.0,
        "clock_event_reasons": 0x24,
        "clock_event_names": ["sw_power_cap", "sw_thermal_slowdown"],
    }
    require_free_gpu(probe)
    held = GpuProbe(FakeNvml([SimpleNamespace(pid=4242, usedGpuMemory=2**30)]))
    with pytest.raises(BenchError, match="another process holds the GPU \\(pid 4242 on GPU 0\\)"):
        require_free_gpu(held)
