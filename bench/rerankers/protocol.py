"""The one interface every reranker adapter implements (plan section "Rerankers").

An adapter sees a query and its candidates in first-stage order and returns one fp32 score per
candidate plus a per-call record. It knows nothing of stages, journals or files, and it never ranks:
ties are broken by first-stage rank in ``analysis.stats.ranking.rank_by_score``, the project's only ranking
function. The plan requires, per local model, the longest observed input (tokens of the real model
input) and the number of truncated pairs; ``CallRecord`` carries them per call and ``summarise``
aggregates them over calls, together with dtype, device, chunk size, model id, revision and package
versions (``RerankerMeta``).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NotRequired, Protocol, TypedDict, runtime_checkable

import numpy as np
import numpy.typing as npt

# Packages whose versions change scores; recorded in every RerankerMeta.
SCORING_PACKAGES: tuple[str, ...] = ("torch", "transformers", "sentence-transformers", "numpy", "tokenizers")


class CallRecord(TypedDict):
    """What one ``score`` call records. Token counts are of the real model input (special tokens,
    instruction and template included), after truncation."""

    n: int  # number of passages scored
    max_input_tokens: int | None  # longest model input in this call, in tokens (0 if n == 0); None: not
    # measured (an API truncates server-side), with the reason in ``tokens_unmeasured``
    truncated_pairs: int | None  # pairs whose model input was cut to the maximum length; None: not measured
    chunk_size: int  # pairs per forward pass actually used (after any out-of-memory halving)
    ties: int  # passages whose fp32 score equals another passage's score in this call
    # tokens of all model inputs of this call, after truncation (plan "Latency": the input length
    # distribution); absent when the adapter cannot see them (an API)
    input_tokens: NotRequired[int]
    tokens_unmeasured: NotRequired[str]  # why the two counts above are None (never 0 for "unknown")


@dataclass(frozen=True)
class RerankerMeta:
    """Everything about a loaded adapter that a result file must name."""

    id: str  # plan model id ("bge-v2-m3") or a stand-in id ("minilm-standin")
    model: str  # hub repository ("BAAI/bge-reranker-v2-m3") or API model name
    revision: str | None  # pinned hub revision; None for an API model
    dtype: str  # torch dtype name the model computes in ("float32", "bfloat16", ...)
    device: str  # "cpu", "cuda", "cuda:0", or "api"
    chunk_size: int | None  # configured pairs per forward pass; None: all k in one pass
    listwise: bool  # True: scores depend on the other candidates (jina); run separately per depth
    max_length: int | None = None  # token limit of one model input in effect (None: vendor code decides)
    implementation: str = ""  # plan column "implementation"
    variant: str = "correct"  # "correct", or a deliberately wrong variant for the pitfalls experiment
    packages: Mapping[str, str] = field(default_factory=dict)  # package -> version
    extra: Mapping[str, Any] = field(default_factory=dict)  # family facts (remote-code revision, ...)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["packages"] = dict(self.packages)
        out["extra"] = dict(self.extra)
        return out


@dataclass(frozen=True)
class ScoreResult:
    """fp32 scores, one per passage in the order given, and the call's record."""

    scores: npt.NDArray[np.float32]
    record: CallRecord

    def __post_init__(self) -> None:
        if not isinstance(self.scores, np.ndarray) or self.scores.dtype != np.float32:
            raise TypeError("ScoreResult.scores must be a float32 numpy array (upcast before returning)")
        if self.scores.ndim != 1 or self.scores.shape[0] != self.record["n"]:
            raise ValueError(
                f"ScoreResult has {self.scores.shape} scores but the record says n={self.record['n']}"
            )
        if not np.all(np.isfinite(self.scores)):
            raise ValueError("ScoreResult.scores contains NaN or infinity")


class ModelUnavailable(Exception):
    """The model cannot score anything now (rejected API key, no access, unknown model name): the caller
    stops calling this model and records it as "not run" instead of recording an error for every query."""


@runtime_checkable
class Reranker(Protocol):
    """A reranker adapter. ``passages`` arrive in first-stage order; scores come back in that order."""

    @property
    def meta(self) -> RerankerMeta: ...

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult: ...


def score_parts(reranker: Reranker, query: str, passages: Sequence[str]) -> Callable[[], ScoreResult]:
    """The timed part of one call, run now; returns its bookkeeping part, to run after the clock has
    stopped. Adapters with a ``score_timed`` method split the two (the torch adapters); for the
    others the whole ``score`` call is the timed part."""
    timed = getattr(reranker, "score_timed", None)
    if callable(timed):
        finish: Callable[[], ScoreResult] = timed(query, passages)
        return finish
    result = reranker.score(query, passages)
    return lambda: result


def count_ties(scores: npt.NDArray[np.float32]) -> int:
    """Number of passages whose score equals at least one other passage's score (bf16 collapse shows here)."""
    if scores.size == 0:
        return 0
    _, counts = np.unique(scores, return_counts=True)
    return int(counts[counts > 1].sum())


def make_result(
    scores: Sequence[float] | npt.NDArray[Any],
    *,
    max_input_tokens: int | None,
    truncated_pairs: int | None,
    chunk_size: int,
    input_tokens: int | None = None,
    tokens_unmeasured: str | None = None,
) -> ScoreResult:
    """Upcast to fp32 (never downcast from a wider type silently: fp64 values are rounded once, here),
    count ties and build the record. Token counts that could not be measured are None, and then
    ``tokens_unmeasured`` must say why (a missing count is never recorded as 0)."""
    if (max_input_tokens is None or truncated_pairs is None) != (tokens_unmeasured is not None):
        raise ValueError("token counts are None exactly when tokens_unmeasured gives the reason")
    arr = np.asarray(scores, dtype=np.float32).reshape(-1)
    record: CallRecord = {
        "n": int(arr.shape[0]),
        "max_input_tokens": None if max_input_tokens is None else int(max_input_tokens),
        "truncated_pairs": None if truncated_pairs is None else int(truncated_pairs),
        "chunk_size": int(chunk_size),
        "ties": count_ties(arr),
    }
    if input_tokens is not None:
        record["input_tokens"] = int(input_tokens)
    if tokens_unmeasured is not None:
        record["tokens_unmeasured"] = tokens_unmeasured
    return ScoreResult(scores=arr, record=record)


def token_counts(calls: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``max_input_tokens``, ``truncated_pairs`` over calls, and ``tokens_unmeasured``: the counts are None
    (with the reason) if any call could not measure them; a sum over the measured calls only would pass
    for a measurement."""
    calls = list(calls)
    reasons = sorted({str(c["tokens_unmeasured"]) for c in calls if c.get("tokens_unmeasured")})
    if reasons:
        return {"max_input_tokens": None, "truncated_pairs": None, "tokens_unmeasured": "; ".join(reasons)}
    return {
        "max_input_tokens": max((int(c.get("max_input_tokens") or 0) for c in calls), default=0),
        "truncated_pairs": sum(int(c.get("truncated_pairs") or 0) for c in calls),
        "tokens_unmeasured": None,
    }


def summarise(meta: RerankerMeta, records: Iterable[CallRecord]) -> dict[str, Any]:
    """Aggregate record over calls: what a result file stores next to the run.

    ``chunk_size_min`` is the smallest chunk actually used (after out-of-memory halving), so a
    changed chunk size is visible even if it happened in one call only.
    """
    recs = list(records)
    chunks = [r["chunk_size"] for r in recs if r["n"] > 0]
    return {
        "meta": meta.to_dict(),
        "calls": len(recs),
        "pairs": sum(r["n"] for r in recs),
        **token_counts(recs),  # type: ignore[arg-type]
        "ties": sum(r["ties"] for r in recs),
        "chunk_size_min": min(chunks) if chunks else None,
        "chunk_size_max": max(chunks) if chunks else None,
    }


class RecordLog:
    """Keeps every call's record; adapters expose it as ``.log`` so callers can ``summarise`` later."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    def add(self, result: ScoreResult) -> ScoreResult:
        self.records.append(result.record)
        return result

    def summary(self, meta: RerankerMeta) -> dict[str, Any]:
        return summarise(meta, self.records)


def package_versions(names: Sequence[str] = SCORING_PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that change scores ("absent" if not installed)."""
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "absent"
    return out
