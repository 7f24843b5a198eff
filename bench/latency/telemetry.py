"""The telemetry sampler that runs beside a latency block, never inside the timed call (plan section
"Latency": ``nvidia-smi`` logging clocks, temperature and power throughout; here: a background sampler
at a fixed interval, its log committed next to the samples).

A daemon thread calls each probe on a fixed schedule (tick ``i`` at ``start + i * interval``, so a slow
probe does not stretch the interval) and keeps ``{"t_s": seconds since start, <probe name>: value,
"<probe name>_t_s": seconds since start when that probe began}``. ``start_ns`` is the start on
``time.perf_counter_ns``, the clock of the calls: the harness stores each measured call's start on the same
scale (``call_offsets_s``), so a clock dip can be tied to the calls it touched.
Probes are plain functions: host load and CPU frequency always, ``GpuProbe.sample`` on GPU runs. A probe
that raises records null for that tick (and the error text once in ``errors``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from bench.latency.host import cpu_mhz

Probe = Callable[[], Any]


def host_probes() -> dict[str, Probe]:
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"load1": lambda: os.getloadavg()[0], "cpu_mhz": lambda: cpu_mhz(affinity)}


class Sampler:
    def __init__(self, probes: Mapping[str, Probe], *, interval_s: float = 0.5, source: str = "host") -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self.probes = dict(probes)
        self.interval_s = interval_s
        self.source = source
        self.samples: list[dict[str, Any]] = []
        self.errors: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_ns = 0

    def _tick(self) -> None:
        row: dict[str, Any] = {"t_s": (time.perf_counter_ns() - self._start_ns) / 1e9}
        for name, probe in self.probes.items():
            row[f"{name}_t_s"] = (time.perf_counter_ns() - self._start_ns) / 1e9
            try:
                row[name] = probe()
            except Exception as exc:  # a failing probe loses its value, never the block
                row[name] = None
                self.errors.setdefault(name, f"{type(exc).__name__}: {exc}")
        self.samples.append(row)

    def _loop(self) -> None:
        i = 0
        while True:
            self._tick()
            i += 1
            due = self._start_ns + round(i * self.interval_s * 1e9)
            if self._stop.wait(max(0.0, (due - time.perf_counter_ns()) / 1e9)):
                return

    @property
    def start_ns(self) -> int:
        """``time.perf_counter_ns`` at the start (0 before it)."""
        return self._start_ns

    def start(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("a Sampler runs once")
        self._start_ns = time.perf_counter_ns()
        self._thread = threading.Thread(target=self._loop, name="latency-telemetry", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        """Stop (one last tick included) and return the log as stored in the block."""
        if self._thread is not None and self._thread.is_alive():
            self._stop.set()
            self._thread.join()
            self._tick()
        return {
            "source": self.source,
            "interval_s": self.interval_s,
            "fields": ["t_s", *(f for name in self.probes for f in (name, f"{name}_t_s"))],
            "errors": dict(self.errors),
            "samples": list(self.samples),
        }

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
