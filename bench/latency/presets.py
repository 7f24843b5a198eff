"""The plan's latency presets as data (plan section "Latency"); every number comes from ``bench.core.plan``.

- ``gpu``: all seven local models, every query, 3 passes, k = 20, 50, 100, published.
- ``cpu``: gte-base, bge-v2-m3, jina-v3.5, qwen3-0.6b (PyTorch fp32) and bge-v2-m3 with OpenVINO int8
  (``INT8_ID``, measurable as soon as the reranker registry provides it); a fixed sample of 100 queries
  (seed 20261009), k = 20 and 100, 1 pass; qwen3-4b on 5 queries at k = 20 with 1 warm-up call; published.
- ``cpu-pre``: the same models and numbers on the desktop, pinned to 8 CPUs; never published.
- ``api``: both Voyage models, every query, k = 20 and 100, 1 pass, no warm-up (billed tokens per k are
  recorded from the first call on), published.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from analysis.core.plan import INT8_MODEL
from bench.core.errors import BenchError
from bench.core.plan import (
    API_DEPTHS,
    API_RERANKERS,
    CPU_DEPTHS,
    CPU_MODELS,
    CPU_PASSES,
    CPU_QWEN4B_DEPTH,
    CPU_QWEN4B_QUERIES,
    CPU_QWEN4B_WARMUP,
    CPU_SAMPLE_QUERIES,
    CPU_SAMPLE_SEED,
    GPU_DEPTHS,
    GPU_PASSES,
    LOCAL_RERANKERS,
    SEED,
    WARMUP_CALLS,
)

INT8_ID = INT8_MODEL  # the OpenVINO int8 adapter's registry id (int8 issue)
QWEN4B_ID = "qwen3-4b"


@dataclass(frozen=True)
class ModelRule:
    """How one model is measured within a preset."""

    depths: tuple[int, ...]
    warmup: int
    queries: int | None = None  # None: every query of the preset; n: the first n of the seeded order


@dataclass(frozen=True)
class Preset:
    name: str
    kind: str  # folder under results/latency/<publication>/
    published: bool
    device: str
    passes: int
    depths: tuple[int, ...]
    warmup: int
    sample: int | None  # None: every dev query; n: a fixed sample of n (seed ``sample_seed``)
    sample_seed: int | None
    models: tuple[str, ...]
    rules: MappingProxyType[str, ModelRule] = field(default_factory=lambda: MappingProxyType({}))
    order_seed: int = SEED  # the measured order (bench.latency.order.seeded_order)

    def rule(self, model: str) -> ModelRule:
        return self.rules.get(model, ModelRule(self.depths, self.warmup))

    def check_depths(self, depths: tuple[int, ...]) -> tuple[int, ...]:
        allowed = set(self.depths) | {d for r in self.rules.values() for d in r.depths}
        bad = [k for k in depths if k not in allowed]
        if bad:
            raise BenchError(
                f"k = {', '.join(map(str, bad))} is not a depth of the plan's {self.name} latency preset "
                f"(k = {', '.join(map(str, sorted(allowed)))}); pass --k with one of those or leave it out."
            )
        return depths


_CPU_RULES = MappingProxyType(
    {QWEN4B_ID: ModelRule((CPU_QWEN4B_DEPTH,), CPU_QWEN4B_WARMUP, queries=CPU_QWEN4B_QUERIES)}
)
_CPU_MODELS = (*CPU_MODELS, INT8_ID, QWEN4B_ID)

PRESETS = MappingProxyType(
    {
        p.name: p
        for p in (
            Preset(
                "gpu", "gpu", True, "cuda", GPU_PASSES, GPU_DEPTHS, WARMUP_CALLS, None, None, LOCAL_RERANKERS
            ),
            Preset(
                "cpu",
                "cpu",
                True,
                "cpu",
                CPU_PASSES,
                CPU_DEPTHS,
                WARMUP_CALLS,
                CPU_SAMPLE_QUERIES,
                CPU_SAMPLE_SEED,
                _CPU_MODELS,
                _CPU_RULES,
            ),
            Preset(
                "cpu-pre",
                "cpu",
                False,
                "cpu",
                CPU_PASSES,
                CPU_DEPTHS,
                WARMUP_CALLS,
                CPU_SAMPLE_QUERIES,
                CPU_SAMPLE_SEED,
                _CPU_MODELS,
                _CPU_RULES,
            ),
            Preset("api", "api", True, "api", 1, API_DEPTHS, 0, None, None, API_RERANKERS),
        )
    }
)


def availability(model_id: str) -> str | None:
    """None if the reranker registry provides ``model_id``; otherwise the reason, naming it.

    The one place that decides whether a model (the int8 variant above all) can be measured: it becomes
    measurable by merely being registered (a registered adapter that cannot load, e.g. its quantised folder
    is missing, is refused by name when it is loaded)."""
    # lazy: the registry pulls numpy and httpx, which `bench status` must not load (test_status.py)
    from bench.rerankers.registry import registered_ids

    if model_id in registered_ids():
        return None
    if model_id == INT8_ID:
        return (
            f"{INT8_ID} refused: the reranker registry has no OpenVINO int8 adapter yet "
            "(bench int8 quantize builds it; see the OpenVINO int8 section of the plan)"
        )
    return f"{model_id} refused: no adapter with this id in the reranker registry"
