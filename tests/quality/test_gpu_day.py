"""In the quality phase: one model on the card at a time, a sticky CUDA error stops the
phase instead of counting every later query as 0, and each model's peak GPU memory is recorded,
null with the reason on the CPU."""

from __future__ import annotations

import gc
import io
import json
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from bench.core.errors import BenchError
from bench.core.journal import Journal
from bench.quality.candidates import freeze
from bench.quality.driver import execute
from bench.quality.phase import PhaseSpec, run_phase
from bench.quality.study import Study
from tests.conftest import REPO_ROOT
from tests.quality.fakes import make_inputs
from tests.support.fakes import FakeReranker

SPEC = PhaseSpec(stages=("s1",), models=("first", "second", "third"), depths=(20, 50, 100))
RUNS = "runs"


def test_previous_model_is_gone_before_the_next_loads(tmp_path: Path) -> None:
    """The quality loop rebound ``reranker = load(model)`` only after the new load returned, so the previous
    model (8 GB for qwen3-4b before querit-4b) was still referenced while the next one loaded."""
    sources, queries, texts = make_inputs(tmp_path / "in")
    cands = freeze(tmp_path / "study", sources)
    alive: list[weakref.ref[FakeReranker]] = []
    at_load: list[list[bool]] = []

    def load(model: str) -> FakeReranker:
        gc.collect()  # only what is still referenced survives a collection
        at_load.append([ref() is not None for ref in alive])
        fake = FakeReranker(model)
        alive.append(weakref.ref(fake))
        return fake

    with Journal(tmp_path / "study" / "journal.jsonl") as j:
        outcome = run_phase(j, cands, queries, texts, load, SPEC, stream=io.StringIO())
    assert outcome.scored > 0
    assert at_load == [[], [False], [False, False]]


def test_device_memory_is_freed_between_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before each load: collected, the allocator's cache emptied, the peak counters reset (CUDA stand-in)."""
    import torch

    events: list[str] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: events.append("empty_cache"))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda *a: events.append("reset_peak"))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a: 3 * 2**30)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda *a: 4 * 2**30)
    sources, queries, texts = make_inputs(tmp_path / "in")
    cands = freeze(tmp_path / "study", sources)

    def load(model: str) -> FakeReranker:
        events.append(f"load {model}")
        return FakeReranker(model)

    with Journal(tmp_path / "study" / "journal.jsonl") as j:
        outcome = run_phase(j, cands, queries, texts, load, SPEC, stream=io.StringIO())
    loads = [i for i, e in enumerate(events) if e.startswith("load")]
    for i in loads:
        assert events[i - 2 : i] == ["empty_cache", "reset_peak"], events
    assert outcome.memory["second"] == {
        "peak_allocated_bytes": 3 * 2**30,
        "peak_reserved_bytes": 4 * 2**30,
        "unmeasured": None,
    }


def test_peak_memory_on_the_cpu_is_null_with_the_reason(tmp_path: Path) -> None:
    sources, queries, texts = make_inputs(tmp_path / "in")
    cands = freeze(tmp_path / "study", sources)
    with Journal(tmp_path / "study" / "journal.jsonl") as j:
        outcome = run_phase(j, cands, queries, texts, FakeReranker, SPEC, stream=io.StringIO())
    for model in SPEC.models:
        got = outcome.memory[model]
        assert got["peak_allocated_bytes"] is None and got["peak_reserved_bytes"] is None
        assert "CUDA" in got["unmeasured"]


def _accelerator_error() -> BaseException:
    """What torch 2.15 raises after a device-side assert (``torch.AcceleratorError``, a RuntimeError)."""
    import torch

    text = "CUDA error: device-side assert triggered\nCompile with `TORCH_USE_CUDA_DSA` to enable DSA."
    make = getattr(torch, "AcceleratorError", RuntimeError)
    try:
        return make(text)  # type: ignore[no-any-return]
    except TypeError:  # a constructor with other arguments: the older RuntimeError form of the same error
        return RuntimeError(text)


def _study(tmp_path: Path) -> Study:
    return Study.start(
        tmp_path / "study",
        kind="rehearsal",
        plan_path=REPO_ROOT / "PLAN.md",
        params={"t": 1},
        provenance={"git": {"commit": None}},
        preflight=None,
    )


@pytest.mark.parametrize("sticky", [True, False])
def test_sticky_cuda_error_stops_the_phase_and_records_nothing(tmp_path: Path, sticky: bool) -> None:
    """The third call raises. A sticky CUDA error: nothing journaled for it, nothing after it, the session
    failed with the error and the resume command. Out of memory (not sticky) stays this query's, for retry."""
    import torch

    sources, queries, texts = make_inputs(tmp_path / "in")
    calls = {"n": 0}

    def on_call(fake: FakeReranker, q: str, p: Sequence[str]) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise (
                _accelerator_error() if sticky else torch.OutOfMemoryError("CUDA out of memory. Tried 2 GiB")
            )

    def load(model: str) -> Any:
        return FakeReranker(model, on_call=on_call)

    study = _study(tmp_path)
    run = dict(
        sources=sources,
        queries=queries,
        texts=texts,
        load=load,
        spec=SPEC,
        runs_dir=tmp_path / RUNS,
        resume_hint="bench quality --resume",
        stream=io.StringIO(),
    )
    if not sticky:
        result = execute(study, **run)  # type: ignore[arg-type]
        assert result.outcome.errors == 1
        manifest = json.loads((study.dir / "manifest.json").read_text())
        entry = manifest["models"]["first"]
        assert entry["attention_implementation"] is None  # the fake has no transformers model
        assert "float32_matmul_precision" in entry["torch_settings"]
        memory = manifest["sessions"][-1]["device_memory"]["second"]
        assert memory["peak_allocated_bytes"] is None and "CUDA" in memory["unmeasured"]
        with Journal(study.journal_path) as j:
            (bad,) = [r for r in j.records if r["status"] == "error"]
        assert bad["retry"] is True and "out of memory" in bad["error"]
        return
    with pytest.raises(BenchError) as info:
        execute(study, **run)  # type: ignore[arg-type]
    message = info.value.message
    assert "device-side assert" in message and "resume with: bench quality --resume" in message
    assert "\n" not in message.split("CUDA error")[0]
    with Journal(study.journal_path) as j:
        assert len(j.records) == 2 and all(r["status"] == "ok" for r in j.records)
    session = json.loads((study.dir / "manifest.json").read_text())["sessions"][-1]
    assert session["status"] == "failed" and "device-side assert" in session["error"]
    assert session["resume"] == "bench quality --resume"


def test_sticky_error_classification() -> None:
    import torch

    from bench.core.memory import is_out_of_memory, is_sticky_device_error

    assert is_sticky_device_error(_accelerator_error())
    assert is_sticky_device_error(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert not is_sticky_device_error(torch.OutOfMemoryError("CUDA out of memory."))
    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory."))
    assert not is_sticky_device_error(ValueError("adapter returned 3 scores for 4 passages"))
    assert not is_sticky_device_error(RuntimeError("shape mismatch"))
