"""The check functions of the GPU day, each taking the device so that the CPU tests run
the same code (``test_checks_on_cpu.py``) and the GPU tests (``test_gpu.py``) only add the CUDA side. Each
returns what it measured as a dict; the tests print it (``benchmarks/gpu_check.sh`` keeps the log)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.latency.telemetry import Sampler
from bench.rerankers.base import Chunk, ChunkedTorchReranker
from bench.rerankers.protocol import RerankerMeta
from tests.conftest import REPO_ROOT

QWEN3_VOCAB = 151_669  # Qwen/Qwen3-Reranker-0.6B and -4B config.json "vocab_size"
LOCAL_FAMILIES = (
    "gte-base",
    "bge-v2-m3",
    "jina-v3.5",
    "qwen3-0.6b",
    "qwen3-4b",
    "mxbai-large-v2",
    "querit-4b",
)


def workload(device: str, n: int = 1024, repeat: int = 20) -> Callable[[], Any]:
    """A fixed amount of matrix products on ``device`` (fp32), the thing the timers and the sampler time."""
    import torch

    gen = torch.Generator().manual_seed(0)
    a = torch.rand(n, n, generator=gen).to(device)

    def run() -> Any:
        x = a
        for _ in range(repeat):
            x = torch.tanh(x @ a)
        return x

    return run


def timer_against_events(cuda: Any, device: str, calls: int = 20) -> dict[str, Any]:
    """``CudaTimer``'s wall time against its CUDA-event time over ``calls`` calls of the workload."""
    from bench.latency.timer import CudaTimer

    timer, run = CudaTimer(cuda), workload(device)
    run()  # first call: kernels load, allocator warms
    pairs = [timer.time(run)[1:] for _ in range(calls)]
    ratios = [wall / ev for wall, ev in pairs if ev]
    return {
        "wall_ns": [p[0] for p in pairs],
        "cuda_ns": [p[1] for p in pairs],
        "min_ratio": min(ratios),
        "max_ratio": max(ratios),
    }


def sampler_cost(
    probes: dict[str, Callable[[], Any]], device: str, calls: int = 30, interval_s: float = 0.05
) -> dict[str, Any]:
    """Median time of the workload alone and with the telemetry sampler running beside it (an interval ten
    times shorter than the study's 0.5 s, so that any cost shows), alternating blocks of calls."""
    import statistics

    run = workload(device, n=512, repeat=10)
    sync = _sync(device)

    def one() -> int:
        sync()
        start = time.perf_counter_ns()
        run()
        sync()
        return time.perf_counter_ns() - start

    one()
    alone, beside = [], []
    for _ in range(3):
        alone += [one() for _ in range(calls)]
        with Sampler(probes, interval_s=interval_s) as sampler:
            beside += [one() for _ in range(calls)]
        ticks = len(sampler.samples)
    a, b = statistics.median(alone), statistics.median(beside)
    return {"alone_ms": a / 1e6, "beside_ms": b / 1e6, "overhead": b / a - 1, "ticks_last_block": ticks}


def _sync(device: str) -> Callable[[], None]:
    if device.startswith("cuda"):
        import torch

        return torch.cuda.synchronize
    return lambda: None


class MemoryHungry(ChunkedTorchReranker):
    """A chunked adapter whose forward pass allocates ``bytes_per_pair`` per pair on ``device``: on a GPU, the
    real out-of-memory path (torch's own error, the caching allocator) without a real model."""

    def __init__(self, device: str, bytes_per_pair: int) -> None:
        meta = RerankerMeta(
            id="memory-hungry",
            model="test/memory-hungry",
            revision=None,
            dtype="float32",
            device=device,
            chunk_size=None,
            listwise=False,
        )
        super().__init__(meta)
        self.per_pair = bytes_per_pair
        self.sizes: list[int] = []

    def _chunk(self, query: str, passages: Sequence[str]) -> Chunk:
        import torch

        lengths = [len(p) for p in passages]
        x = torch.tensor(lengths, dtype=torch.float32, device=self.meta.device)
        return Chunk({"x": x}, lengths, [False] * len(lengths))

    def _forward(self, features: dict[str, Any]) -> Any:
        import torch

        n = int(features["x"].shape[0])
        self.sizes.append(n)
        held = torch.empty(n * self.per_pair // 4, dtype=torch.float32, device=self.meta.device)
        held.fill_(1.0)
        return features["x"] * held[0]


def oom_path(device: str, bytes_per_pair: int, k: int = 100) -> dict[str, Any]:
    """Settle the chunk size of ``MemoryHungry`` at k pairs; what it settled on, the sizes tried, and the
    memory allocated before and after (the failed passes' memory must be back)."""
    from bench.core.memory import cuda_in_use

    def allocated() -> int | None:
        return int(sys.modules["torch"].cuda.memory_allocated()) if cuda_in_use() else None

    before = allocated()
    adapter = MemoryHungry(device, bytes_per_pair)
    size = adapter.settle_chunk_size("q", ["Text"] * k)
    result = adapter.score("q", ["Text"] * k)
    return {
        "settled": size,
        "sizes": adapter.sizes,
        "oom_events": adapter.oom_events,
        "allocated_before": before,
        "allocated_after": allocated(),
        "chunk_after": result.record["chunk_size"],
    }


def family_scores(models_root: Path, device: str, dtype: str) -> dict[str, Any]:
    """Every local family's tiny model (tests.support.tiny_models.write_models) loaded on ``device`` in
    ``dtype`` and scoring one query: model -> (scores, the call record) or the error text."""
    import os

    from bench.core.memory import free_device_memory
    from bench.core.plan import RERANKERS
    from bench.rerankers.registry import load_reranker
    from bench.rerankers.snapshots import snapshot_path

    os.environ["BENCH_MODELS_DIR"] = str(models_root)
    words = "berlin ist die hauptstadt von deutschland und liegt an der spree".split()
    docs = [" ".join(words[: 3 + i]) for i in range(8)]
    out: dict[str, Any] = {}
    for model in LOCAL_FAMILIES:
        plan = RERANKERS[model]
        assert plan.revision is not None
        snap = snapshot_path(plan.model, plan.revision, models_root)
        try:
            adapter = load_reranker(model, device=device, dtype=dtype, snapshot_dir=snap)
            result = adapter.score("wo liegt berlin?", docs)
            out[model] = {
                "scores": [float(x) for x in result.scores],
                "record": dict(result.record),
                "dtype": adapter.meta.dtype,
            }
        except Exception as exc:  # reported per model: one family's failure is the finding, not a crash
            out[model] = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            adapter = None
            free_device_memory()
    return out


def real_vocab_qwen3(path: Path) -> Path:
    """A one-layer Qwen3 with hidden size 8 and the real vocabulary size, in the hub layout of qwen3-0.6b."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from tests.support.tiny_models import build_word_tokenizer, tiny_snapshot

    torch.manual_seed(0)
    tok = build_word_tokenizer()
    fields: dict[str, Any] = {
        "vocab_size": QWEN3_VOCAB,
        "hidden_size": 8,
        "intermediate_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 1,
        "num_key_value_heads": 1,
        "head_dim": 8,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        "pad_token_id": tok.pad_token_id,
    }
    snap = tiny_snapshot("qwen3-0.6b", path)
    snap.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(snap)
    Qwen3ForCausalLM(Qwen3Config(**fields)).eval().save_pretrained(snap)
    return snap


def reference_peak(model_dir: Path, device: str, batch: int = 100, words: int = 600) -> dict[str, Any]:
    """The Qwen3 reference (references/card_qwen3.py) on ``batch`` passages of about ``words`` tokens each,
    fp16 on ``device``: its peak allocated memory against batch x vocab and batch x width x vocab."""
    from bench.core.memory import peak_memory, reset_peak_memory
    from bench.core.plan import QWEN3_INSTRUCTION

    sys.path.insert(0, str(REPO_ROOT / "references"))
    try:
        import card_qwen3
    finally:
        sys.path.remove(str(REPO_ROOT / "references"))
    text = " ".join(["berlin"] * words)
    queries = [{"qid": "q", "query": "wo liegt berlin?", "passages": [text] * batch}]
    options = {"instruction": QWEN3_INSTRUCTION, "max_length": 8192}
    dtype = "float16" if device.startswith("cuda") else "float32"
    reset_peak_memory()
    scores = card_qwen3.score_queries(str(model_dir), queries, device=device, dtype=dtype, options=options)
    width = words + 60  # plus template and query: an under-estimate, so the full-logits bound is low
    element = 2 if dtype == "float16" else 4
    return {
        "scores": len(scores["q"]),
        **peak_memory(),
        "last_position_logits_bytes": batch * QWEN3_VOCAB * element,
        "all_positions_logits_bytes": batch * width * QWEN3_VOCAB * element,
    }
