"""In the latency phase: one chunk size per model, settled before its first block and kept across
passes, k and a resume; a call that ran out of memory is measured again, and the recovery runs
outside the ``except``; what each block records: peak GPU memory (null with the reason off
CUDA), each call's start on the telemetry clock, NVML throttle reasons, the torch settings and attention
implementation. Out of memory is a stand-in of torch's own type (``torch.OutOfMemoryError``, which is
``torch.cuda.OutOfMemoryError``) raised by a model on the CPU."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from analysis.latency import read_blocks
from bench.latency.callers import RerankerCaller
from bench.latency.commands import _sampler_factory, measure_all
from bench.latency.gpu import GpuProbe
from bench.latency.harness import Call
from bench.latency.presets import PRESETS
from bench.latency.run import Inputs, Settings
from bench.latency.timer import WallTimer
from bench.rerankers.base import Chunk, ChunkedTorchReranker
from bench.rerankers.protocol import RerankerMeta
from tests.latency.fakes import quiet_host
from tests.latency.test_timer_telemetry import FakeNvml

T = TypeVar("T")
LIMIT = 30  # pairs per forward pass that fit the stand-in card


class OutOfMemoryModel(ChunkedTorchReranker):
    """A chunked adapter whose forward pass runs out of memory above ``LIMIT`` pairs (or once, on demand)."""

    def __init__(self) -> None:
        meta = RerankerMeta(
            id="gte-base",
            model="test/oom",
            revision="0" * 40,
            dtype="float32",
            device="cpu",
            chunk_size=None,
            listwise=False,
        )
        super().__init__(meta)
        self.forward_sizes: list[int] = []
        self.fail_next = False

    def _chunk(self, query: str, passages: Sequence[str]) -> Chunk:
        import torch

        lengths = [len(p) for p in passages]
        return Chunk({"x": torch.tensor(lengths, dtype=torch.float32)}, lengths, [False] * len(lengths))

    def _forward(self, features: dict[str, Any]) -> Any:
        import torch

        n = int(features["x"].shape[0])
        self.forward_sizes.append(n)
        if n > LIMIT or self.fail_next:
            self.fail_next = False
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return -features["x"]


def _inputs() -> Inputs:
    queries = {f"q{i:02d}": f"Frage {i}" for i in range(25)}
    lists = {q: tuple(f"{q}-{j}" for j in range(100)) for q in queries}
    texts = {d: "Text " * (1 + (hash(d) % 7)) for ds in lists.values() for d in ds}
    return Inputs(queries, lists, texts, {"stage": "hybrid-71k", "run_file": "x", "sha256": "0"})


def _measure(root: Path, adapter: OutOfMemoryModel, inputs: Inputs, nvml: bool = False) -> None:
    settings = Settings(
        preset=PRESETS["gpu"],
        machine="stand-in",
        session="stand-in",
        out_root=root,
        runs_dir=None,
        stage="hybrid-71k",
        allow_busy=True,
    )
    gpu = GpuProbe(FakeNvml([])) if nvml else None
    measure_all(
        ["gte-base"],
        settings,
        inputs,
        timer=WallTimer(),
        manifest={"kind": "test"},
        refused={},
        sampler=_sampler_factory("gpu", 0.01, gpu),
        stream=io.StringIO(),
        load=lambda m: adapter,
        host=quiet_host,
    )


def test_one_chunk_size_per_model_across_passes_k_and_a_resume(tmp_path: Path) -> None:
    inputs = _inputs()
    first = OutOfMemoryModel()
    _measure(tmp_path, first, inputs)
    blocks = read_blocks(tmp_path)
    assert len(blocks) == 3 * 3  # passes x k
    # settled once, untimed, before the first block: 100 -> 50 -> 25 pairs per pass
    assert first.forward_sizes[:3] == [100, 50, 25]
    assert [n for n in first.forward_sizes[3:] if n > LIMIT] == []  # no block met an out of memory
    for b in blocks:
        assert b.chunk_size == min(25, b.k) and not [m for m in b.marks if "chunk" in m]
        assert {s.chunk_size for s in b.samples} == {min(25, b.k)}
        assert b.manifest["chunk_settled"]["size"] == 25 and b.manifest["chunk_settled"]["k"] == 100
    # a resume: pass 3 lost; a fresh (unchunked) adapter takes the recorded size and never runs out of memory
    for b in blocks:
        if b.pass_ == 3:
            (tmp_path / b.relpath()).unlink()
    again = OutOfMemoryModel()
    _measure(tmp_path, again, inputs)
    assert again.forward_sizes and max(again.forward_sizes) <= 25
    redone = [b for b in read_blocks(tmp_path) if b.pass_ == 3]
    assert len(redone) == 3 and all(b.chunk_size == min(25, b.k) for b in redone)
    assert all("finished block" in b.manifest["chunk_settled"]["reused"] for b in redone)


class CountingTimer:
    """Each timed call takes 1000 ns more than the one before."""

    description = "counting"

    def __init__(self) -> None:
        self.n = 0

    def time(self, fn: Callable[[], T]) -> tuple[T, int, int | None]:
        self.n += 1
        return fn(), 1000 * self.n, None


def test_a_call_that_ran_out_of_memory_is_measured_again() -> None:
    adapter = OutOfMemoryModel()
    adapter.fix_chunk_size(20)
    adapter.fail_next = True  # the first forward pass of the next call runs out of memory
    timer = CountingTimer()
    caller = RerankerCaller(adapter, timer)
    call = Call("q", "Frage", tuple(f"d{i}" for i in range(20)), tuple("Text" for _ in range(20)))
    obs = caller(call, k=20, pass_=1)
    assert timer.n == 2 and caller.remeasured == 1
    assert obs.sample.ns == 2000  # the second measurement; the one that covered the failure is not kept
    assert obs.sample.chunk_size == 10


def test_recovery_runs_outside_the_except(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside the ``except`` the traceback holds the failed pass's activations: emptying the CUDA cache there
    frees nothing of them."""
    import torch

    seen: list[Any] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: seen.append(sys.exc_info()[0]))
    adapter = OutOfMemoryModel()
    result = adapter.score("Frage", ["Text"] * 40)
    assert result.record["chunk_size"] == 20 and adapter.oom_events == 1
    assert seen == [None]


def test_each_block_records_memory_offsets_throttling_and_settings(tmp_path: Path) -> None:
    _measure(tmp_path, OutOfMemoryModel(), _inputs(), nvml=True)
    b = read_blocks(tmp_path)[0]
    memory = b.host_after["device_memory"]
    assert memory["peak_allocated_bytes"] is None and memory["peak_reserved_bytes"] is None  # never 0
    assert "CUDA" in memory["unmeasured"]
    assert b.telemetry is not None
    offsets = b.telemetry["call_offsets_s"]
    assert len(offsets) == len(b.samples) and offsets == sorted(offsets) and offsets[0] >= 0
    row = b.telemetry["samples"][0]
    assert row["gpu"][0]["clock_event_names"] == ["sw_power_cap", "sw_thermal_slowdown"]
    assert row["gpu_t_s"] >= row["t_s"] and "gpu_t_s" in b.telemetry["fields"]
    settings = b.manifest["torch_settings"]
    assert {"tf32_matmul", "tf32_cudnn", "float32_matmul_precision", "cuda_module_loading"} <= set(settings)
    assert "attention_implementation" in b.manifest  # None here: the stand-in has no transformers model


def test_torch_settings_name_module_loading_and_precision(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from bench.records.provenance import collect_manifest, torch_settings

    monkeypatch.setenv("CUDA_MODULE_LOADING", "EAGER")
    got = torch_settings()
    assert got["cuda_module_loading"] == "EAGER"
    assert got["float32_matmul_precision"] == torch.get_float32_matmul_precision()
    assert got["tf32_matmul"] is bool(torch.backends.cuda.matmul.allow_tf32)
    assert collect_manifest(kind="test")["torch_settings"]["cuda_module_loading"] == "EAGER"
