"""The GPU path without a GPU: the plan's gpu preset through measure_all with the CUDA timer on a fake
torch.cuda and NVML telemetry on a fake NVML (3 passes, warm-up 20, CUDA-event column, GPU fields)."""

from __future__ import annotations

import io
from pathlib import Path

from analysis.latency import block_summary, read_blocks
from bench.latency.commands import _sampler_factory, measure_all
from bench.latency.gpu import GpuProbe
from bench.latency.host import snapshot
from bench.latency.presets import PRESETS
from bench.latency.run import Inputs, Settings
from bench.latency.timer import CudaTimer
from tests.latency.fakes import ordered_fake
from tests.latency.test_timer_telemetry import FakeCuda, FakeNvml


def test_gpu_preset_with_fake_cuda_and_nvml(tmp_path: Path) -> None:
    queries = {f"q{i:02d}": f"Frage {i}" for i in range(25)}
    lists = {q: tuple(f"{q}-{j}" for j in range(100)) for q in queries}
    texts = {d: "Text" for ds in lists.values() for d in ds}
    inputs = Inputs(queries, lists, texts, {"stage": "hybrid-71k", "run_file": "x", "sha256": "0"})
    gpu = GpuProbe(FakeNvml([]))
    settings = Settings(
        preset=PRESETS["gpu"],
        machine="fake gpu box",
        session="fake-gpu",
        out_root=tmp_path,
        runs_dir=None,
        stage="hybrid-71k",
        depths=(20,),
        allow_busy=True,
    )
    fake = ordered_fake()
    measure_all(
        ["gte-base"],
        settings,
        inputs,
        timer=CudaTimer(FakeCuda(event_ms=1.25)),
        manifest={},
        refused={},
        sampler=_sampler_factory("gpu", 0.05, gpu),
        stream=io.StringIO(),
        load=lambda m: fake,
        host=lambda: snapshot(gpu.sample),  # as measure_local gives it: a block's snapshots spend no window
    )
    blocks = read_blocks(tmp_path)
    assert [(b.kind, b.target, b.k, b.pass_, b.published) for b in blocks] == [
        ("gpu", "gte-base", 20, p, True) for p in (1, 2, 3)
    ]
    assert len(fake.calls) == 3 * (20 + 25)
    b = blocks[0]
    assert all(s.cuda_ns == 1_250_000 for s in b.samples) and block_summary(b).cuda.p50_ms == 1.25
    assert b.host_before["gpu"][0]["power_w"] == 31.5 and b.host_after["gpu"][0]["sm_clock_mhz"] == 2800
    assert b.telemetry is not None and b.telemetry["source"] == "nvml+host"
    assert b.telemetry["samples"][0]["gpu"][0]["temperature_c"] == 41
    assert "torch.cuda.synchronize()" in b.timer and b.warmup_query_ids == tuple(sorted(queries))[:20]
