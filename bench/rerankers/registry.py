"""Registry of reranker adapters keyed by the plan's model ids (plan section "Rerankers").

``@register("id", ...)`` adds a builder; a duplicate id raises. Local builders live here; the family
modules import torch only inside the functions that load a model, so listing ids stays cheap; the Voyage
API ids build ``bench.rerankers.voyage.VoyageReranker`` (owned by the checks part). ``STANDIN_IDS`` are
offline stand-ins for the rehearsal, never plan models.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.core.plan import INT8_MODEL
from bench.core.errors import BenchError
from bench.core.paths import int8_model_dir
from bench.core.plan import PITFALL_MODEL, PITFALL_RUN_IDS, RERANKERS, RerankerPlan
from bench.rerankers import decoder as dec
from bench.rerankers.base import choose_dtype, dtype_name
from bench.rerankers.bm25 import BM25Standin
from bench.rerankers.cross_encoder import MAX_LENGTH, EncoderCrossEncoder, load_cross_encoder, model_dtype
from bench.rerankers.decoder import PITFALL_VARIANTS
from bench.rerankers.gte import restore_non_persistent_buffers
from bench.rerankers.jina import DOCUMENT_LIMIT, QUERY_LIMIT, JinaListwise, load_jina

# a higher layer, the one exception (pyproject: bench-layers ignore_imports): the adapter is in bench/int8
from bench.rerankers.openvino.adapter import Int8CrossEncoder
from bench.rerankers.protocol import Reranker, RerankerMeta, package_versions
from bench.rerankers.querit import QueritReranker, load_querit, querit_length
from bench.rerankers.snapshots import SnapshotSpec, resolve_snapshot
from bench.rerankers.standin import STANDIN_MAX_SEQ, MiniLMStandin
from bench.rerankers.voyage import VoyageReranker, base_url_from_env

STANDIN_IDS: tuple[str, ...] = ("minilm-standin", "bm25-standin")
# Variants of plan models that the plan names outside its reranker table ("OpenVINO int8 variant").
VARIANT_IDS: tuple[str, ...] = (INT8_MODEL,)


@dataclass(frozen=True)
class LoadOptions:
    device: str = "cpu"
    dtype: str | None = None
    snapshot_dir: Path | None = None
    chunk_size: int | None = None  # None: all k candidates in one forward pass
    variant: str = "correct"  # or a deliberately wrong variant (decoder family; pitfalls experiment)
    max_length: int | None = None  # None: the vendor default
    corpus: Sequence[str] | None = None  # passage texts whose statistics a lexical scorer uses (bm25-standin)


Builder = Callable[[str, LoadOptions], Reranker]
_REGISTRY: dict[str, Builder] = {}


def register(*model_ids: str) -> Callable[[Builder], Builder]:
    def decorate(builder: Builder) -> Builder:
        for model_id in model_ids:
            if model_id in _REGISTRY:
                raise ValueError(f"reranker id {model_id!r} is registered twice")
            _REGISTRY[model_id] = builder
        return builder

    return decorate


def registered_ids() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def load_reranker(
    model_id: str,
    *,
    device: str = "cpu",
    dtype: str | None = None,
    snapshot_dir: Path | None = None,
    chunk_size: int | None = None,
    variant: str = "correct",
    max_length: int | None = None,
    corpus: Sequence[str] | None = None,
) -> Reranker:
    """Load the adapter for ``model_id`` from its pinned local snapshot (or ``snapshot_dir``); ``corpus``:
    the passage texts of the corpus, for ``bm25-standin`` only (its term statistics)."""
    builder = _REGISTRY.get(model_id)
    if builder is None:
        near = difflib.get_close_matches(model_id, list(_REGISTRY), n=3)
        hint = f" Did you mean {', '.join(near)}?" if near else ""
        raise BenchError(f"Unknown reranker {model_id!r}. Known: {', '.join(sorted(_REGISTRY))}.{hint}")
    if chunk_size is not None and chunk_size < 1:
        raise BenchError(f"chunk_size must be a positive integer, got {chunk_size}")
    if corpus is not None and model_id != "bm25-standin":
        raise BenchError(f"{model_id} takes no corpus; only bm25-standin reads corpus statistics")
    opts = LoadOptions(device, dtype, snapshot_dir, chunk_size, variant, max_length, corpus)
    return builder(model_id, opts)


def base_model(run_id: str) -> str:
    """The plan model behind a run id: itself, or PITFALL_MODEL for a declared pitfalls variant."""
    return PITFALL_MODEL if run_id in PITFALL_RUN_IDS else run_id


def load_run_model(
    run_id: str, *, device: str = "cpu", dtype: str | None = None, snapshot_dir: Path | None = None
) -> Reranker:
    """The adapter of a run id: a plan model (or stand-in) as it is, or a pitfalls variant of the Qwen3
    adapter in its declared configuration (``bench.rerankers.decoder.PITFALL_VARIANTS``)."""
    if base_model(run_id) == run_id:
        return load_reranker(run_id, device=device, dtype=dtype, snapshot_dir=snapshot_dir)

    kwargs = PITFALL_VARIANTS[run_id].load_kwargs()
    return load_reranker(base_model(run_id), device=device, dtype=dtype, snapshot_dir=snapshot_dir, **kwargs)


def spec_for(model_id: str) -> SnapshotSpec:
    plan = RERANKERS[model_id]
    if plan.revision is None:
        raise BenchError(f"{model_id} is an API model; it has no snapshot")
    return SnapshotSpec(model_id, plan.model, plan.revision, plan.code_repo, plan.code_revision)


def _meta(
    plan: RerankerPlan, opts: LoadOptions, *, dtype: str, max_length: int | None, **extra: Any
) -> RerankerMeta:
    return RerankerMeta(
        id=plan.id,
        model=plan.model,
        revision=plan.revision,
        dtype=dtype,
        device=opts.device,
        chunk_size=opts.chunk_size,
        listwise=plan.listwise,
        max_length=max_length,
        implementation=plan.implementation,
        variant=opts.variant,
        packages=package_versions(),
        extra={"dtype_requested": opts.dtype, **extra},
    )


def _only_correct(model_id: str, opts: LoadOptions) -> None:
    if opts.variant != "correct":
        raise BenchError(f"{model_id}: wrong variants exist only for the decoder rerankers (qwen3, mxbai)")


@register("bge-v2-m3", "gte-base")
def _encoder(model_id: str, opts: LoadOptions) -> Reranker:
    _only_correct(model_id, opts)
    plan = RERANKERS[model_id]
    path = resolve_snapshot(spec_for(model_id), opts.snapshot_dir)
    dtype = choose_dtype(model_id, opts.device, opts.dtype)
    max_length = opts.max_length or MAX_LENGTH[model_id]
    is_gte = plan.code_repo is not None
    model = load_cross_encoder(
        path,
        max_length=max_length,
        device=opts.device,
        dtype=dtype,
        trust_remote_code=is_gte,
        code_revision=plan.code_revision,
    )
    extra: dict[str, Any] = {"activation": type(model.activation_fn).__name__, "snapshot": str(path)}
    if is_gte:
        extra["restored_buffers"] = restore_non_persistent_buffers(model.model)
        extra["code"] = f"{plan.code_repo}@{plan.code_revision}"
    meta = _meta(plan, opts, dtype=model_dtype(model), max_length=max_length, **extra)
    return EncoderCrossEncoder(meta, model)


@register("qwen3-0.6b", "qwen3-4b", "mxbai-large-v2")
def _decoder(model_id: str, opts: LoadOptions) -> Reranker:
    plan = RERANKERS[model_id]
    path = resolve_snapshot(spec_for(model_id), opts.snapshot_dir)
    dtype = choose_dtype(model_id, opts.device, opts.dtype)
    is_qwen = plan.instruction is not None
    true_tok, false_tok = ("yes", "no") if is_qwen else ("1", "0")
    model = dec.load_decoder_cross_encoder(
        path, device=opts.device, dtype=dtype, true_token=true_tok, false_token=false_tok
    )
    tok = model[0].tokenizer
    fmt: dec.DecoderFormat
    if is_qwen:
        fmt = dec.Qwen3Format(
            tok, opts.max_length or dec.QWEN3_MAX_LENGTH, opts.variant, instruction=plan.instruction or ""
        )
    else:
        model_max = int(model[0].config.max_position_embeddings)
        fmt = dec.MxbaiFormat(tok, opts.max_length or dec.MXBAI_MAX_LENGTH, opts.variant, model_max=model_max)
    meta = _meta(
        plan,
        opts,
        dtype=model_dtype(model),
        max_length=fmt.max_length,
        score=f"logit({true_tok!r}) - logit({false_tok!r}) at the last position",
        padding="right" if opts.variant == "right-padding" else "left",
        instruction=getattr(fmt, "instruction", None),
        snapshot=str(path),
    )
    return dec.DecoderCrossEncoder(meta, model, fmt)


@register("jina-v3.5")
def _jina(model_id: str, opts: LoadOptions) -> Reranker:
    _only_correct(model_id, opts)
    plan = RERANKERS[model_id]
    path = resolve_snapshot(spec_for(model_id), opts.snapshot_dir)
    model, tokenizer = load_jina(
        path, device=opts.device, dtype=choose_dtype(model_id, opts.device, opts.dtype)
    )
    meta = _meta(
        plan,
        opts,
        dtype=dtype_name(next(model.parameters()).dtype),
        max_length=DOCUMENT_LIMIT,
        query_limit=QUERY_LIMIT,
        snapshot=str(path),
    )
    return JinaListwise(meta, model, tokenizer)


@register("querit-4b")
def _querit(model_id: str, opts: LoadOptions) -> Reranker:
    _only_correct(model_id, opts)
    plan = RERANKERS[model_id]
    path = resolve_snapshot(spec_for(model_id), opts.snapshot_dir)
    model, tokenizer, class_ref = load_querit(
        path, device=opts.device, dtype=choose_dtype(model_id, opts.device, opts.dtype)
    )
    meta = _meta(
        plan,
        opts,
        dtype=dtype_name(next(model.parameters()).dtype),
        max_length=querit_length(tokenizer),
        padded_length=querit_length(tokenizer),
        model_class=class_ref,
        input_format="mteb 2.24.3 QueritWrapper",
        snapshot=str(path),
    )
    return QueritReranker(meta, model, tokenizer)


@register("minilm-standin")
def _standin(model_id: str, opts: LoadOptions) -> Reranker:
    _only_correct(model_id, opts)
    return MiniLMStandin(
        device=opts.device,
        dtype=opts.dtype,
        chunk_size=opts.chunk_size,
        max_seq=opts.max_length or STANDIN_MAX_SEQ,
    )


@register("bm25-standin")
def _bm25(model_id: str, opts: LoadOptions) -> Reranker:
    """BM25 over a corpus, the rehearsal's lexical stand-in; needs ``corpus``."""
    _only_correct(model_id, opts)
    if opts.corpus is None:
        raise BenchError(
            "bm25-standin needs the corpus its candidates come from (load_reranker(..., corpus=texts)): its "
            "scores use that corpus's term statistics. `bench rehearse` passes the rehearsal's corpus."
        )
    if opts.dtype not in (None, "float32") or opts.snapshot_dir is not None:
        raise BenchError("bm25-standin has no model: dtype and snapshot_dir do not apply")
    return BM25Standin(opts.corpus, device=opts.device, chunk_size=opts.chunk_size)


@register(*VARIANT_IDS)
def _int8(model_id: str, opts: LoadOptions) -> Reranker:
    """bge-reranker-v2-m3 quantised by ``bench int8 quantize`` (plan: OpenVINO int8 variant), CPU only."""
    _only_correct(model_id, opts)
    if opts.device != "cpu" or opts.dtype not in (None, "int8") or opts.chunk_size is not None:
        raise BenchError(f"{model_id} runs on the CPU in int8, all k pairs in one pass (OpenVINO)")
    return Int8CrossEncoder(opts.snapshot_dir or int8_model_dir(), model_id=model_id)


@register("voyage-rerank-3", "voyage-rerank-3-lite")
def _voyage(model_id: str, opts: LoadOptions) -> Reranker:
    _only_correct(model_id, opts)
    if opts.device not in ("cpu", "api") or opts.dtype is not None or opts.snapshot_dir is not None:
        raise BenchError(f"{model_id} is an API model: device, dtype and snapshot_dir do not apply")
    return VoyageReranker(model_id, base_url=base_url_from_env())
