"""Export to OpenVINO and static int8 quantisation (plan section "OpenVINO int8 variant").

One function, ``quantize_model``, serves both models: the plan's cross-encoder (bge-reranker-v2-m3,
``OVModelForSequenceClassification``, calibration inputs = the tokenised (query, passage) pairs exactly as
the fp32 adapter builds them) and the rehearsal's bi-encoder stand-in (all-MiniLM-L6-v2,
``OVModelForFeatureExtraction``, calibration inputs = the query and the passage of each pair, tokenised
separately as the stand-in encodes them). Recipe (docs/field-notes.md, checked offline here): export with
``from_pretrained(dir, export=True)``, an ``nncf.Dataset`` of tokenised inputs, ``OVQuantizer.quantize``
with ``OVQuantizationConfig`` built from ``QuantSpec``. The folder is built beside its target and swapped in
whole; its manifest (``bench.rerankers.openvino.manifest``) is written last.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.rerankers.openvino.config import QuantSpec, Task
from bench.rerankers.openvino.manifest import check_pins, write_manifest
from bench.rerankers.openvino.runtime import decline_usage_telemetry

MAX_LENGTH_CROSS: int = 512  # the fp32 adapter's bge max_length (model card)


def calibration_features(
    tokenizer: Any, task: Task, pairs: Sequence[tuple[str, str]], max_length: int
) -> list[dict[str, Any]]:
    """One model input per calibration sample, numpy int64, batch size 1 (no padding)."""
    samples: list[dict[str, Any]] = []
    if task == "text-classification":
        for query, passage in pairs:
            enc = tokenizer(
                query, passage, truncation="longest_first", max_length=max_length, return_tensors="np"
            )
            samples.append(dict(enc))
    else:
        for query, passage in pairs:
            for text in (query, passage):
                enc = tokenizer(text, truncation=True, max_length=max_length, return_tensors="np")
                samples.append(dict(enc))
    return samples


def _model_class(task: Task) -> Any:
    """optimum's model class for ``task`` (called by :func:`quantize_model`, which has declined the libraries'
    telemetry and imported them already)."""
    # lazy: optimum and OpenVINO are heavy; only for the int8 variant
    from optimum.intel import OVModelForFeatureExtraction, OVModelForSequenceClassification

    return OVModelForSequenceClassification if task == "text-classification" else OVModelForFeatureExtraction


def quantize_model(
    source: Path,
    out: Path,
    *,
    task: Task,
    pairs: Sequence[tuple[str, str]],
    spec: QuantSpec,
    max_length: int,
    record: dict[str, Any],
) -> dict[str, Any]:
    """Quantise the transformers model in ``source`` into ``out``; returns the manifest written there.

    ``record`` (source model id and revision, calibration-set SHA-256, ...) goes into the manifest as is.
    """
    check_pins()
    if not pairs:
        raise BenchError(
            f"no calibration pairs: build the calibration set first (`{hint('int8 calibration-set')}`)"
        )
    if not (source / "config.json").is_file():
        raise BenchError(f"{source}: no config.json; expected a transformers model folder")
    # the build folder beside the target, made as the work starts (before the libraries' imports and the
    # export, which are part of it): from here on a failure removes it, and a killed process leaves at most
    # it, never a folder at ``out``
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        decline_usage_telemetry()
        # lazy: optimum and transformers are heavy; only for the int8 variant
        import nncf
        from optimum.intel import OVConfig, OVQuantizationConfig, OVQuantizer
        from transformers import AutoTokenizer

        t0 = time.perf_counter()
        tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
        samples = calibration_features(tokenizer, task, pairs, max_length)
        fp_model = _model_class(task).from_pretrained(
            str(source), export=True, local_files_only=True, compile=False
        )
        t_export = time.perf_counter() - t0
        quantizer = OVQuantizer.from_pretrained(fp_model)
        # every calibration sample is used (nncf's default subset is 128 samples; the plan says 300 pairs)
        used = spec.num_samples or len(samples)
        kwargs = {**spec.ov_kwargs(), "num_samples": used}
        config = OVConfig(quantization_config=OVQuantizationConfig(**kwargs))
        quantizer.quantize(
            calibration_dataset=nncf.Dataset(samples), ov_config=config, save_directory=str(tmp)
        )
        tokenizer.save_pretrained(str(tmp))
        t_total = time.perf_counter() - t0
        manifest = write_manifest(
            tmp,
            task=task,
            spec=spec,
            max_length=max_length,
            calibration_samples=len(samples),
            calibration_samples_used=used,
            record={**record, "export_s": t_export, "quantize_s": t_total - t_export},
        )
        _swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def _swap_in(tmp: Path, out: Path) -> None:
    """Replace ``out`` with ``tmp`` whole (the old folder is removed only after the new one is in place)."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old.{os.getpid()}")
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
