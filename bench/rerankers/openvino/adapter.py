"""int8 OpenVINO adapters behind the reranker protocol (plan sections "Rerankers", "OpenVINO int8 variant").

``Int8CrossEncoder`` is ``bge-v2-m3-int8``: an ``OVModelForSequenceClassification`` from a folder written by
``bench int8 quantize``, fed exactly what the fp32 adapter feeds its model (sentence-transformers'
CrossEncoder pair tokenisation: ``padding=True``, ``truncation="longest_first"``, ``max_length=512``, all k
pairs in one pass) and scored the same way (one logit, sigmoid in fp32), so int8 and fp32 scores are
comparable. ``Int8BiEncoder`` is the rehearsal's int8 stand-in: the quantised all-MiniLM-L6-v2 as a
feature-extraction model, mean pooling and L2 normalisation as the model's sentence-transformers config
does, score = cosine of query and passage, like ``minilm-standin``. Both refuse a folder whose files do not
match its manifest (``bench.rerankers.openvino.manifest.verify_folder``), and both are compiled by
``bench.rerankers.openvino.runtime.compile_int8`` (inference precision f32, D-037); what OpenVINO reports
after compiling (precision, execution mode, threads, streams, the kernels' instruction set) and the CPU's int8
and bf16 flags go into ``meta.extra["openvino_runtime"]``, so every result that records the adapter's meta
records them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from analysis.core.plan import INT8_MODEL
from bench.core.errors import BenchError
from bench.core.memory import collector_paused
from bench.rerankers.openvino.manifest import installed, verify_folder
from bench.rerankers.openvino.runtime import compile_int8, decline_usage_telemetry, runtime_properties
from bench.rerankers.protocol import RecordLog, RerankerMeta, ScoreResult, make_result, package_versions

OV_PACKAGES = ("openvino", "nncf", "optimum-intel", "transformers", "tokenizers", "numpy")


def _load(folder: Path, task: str) -> tuple[Any, Any, dict[str, Any]]:
    manifest = verify_folder(folder)  # before the heavy imports: a bad folder is refused at once
    if manifest["task"] != task:
        raise BenchError(f"{folder}: a {manifest['task']} model, expected {task}")
    decline_usage_telemetry()
    with collector_paused():  # their objects live as long as the process: no collector passes over them
        # lazy: optimum and transformers are heavy; only for the int8 variant
        from optimum.intel import OVModelForFeatureExtraction, OVModelForSequenceClassification
        from transformers import AutoTokenizer

    cls = OVModelForSequenceClassification if task == "text-classification" else OVModelForFeatureExtraction
    model = compile_int8(cls, folder)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    return model, tokenizer, manifest


def _meta(
    model_id: str, manifest: dict[str, Any], folder: Path, implementation: str, model: Any
) -> RerankerMeta:
    return RerankerMeta(
        id=model_id,
        model=str(manifest.get("source_model")),
        revision=manifest.get("source_revision"),
        dtype="int8 (OpenVINO static)",
        device="cpu",
        chunk_size=None,
        listwise=False,
        max_length=int(manifest["max_length"]),
        implementation=implementation,
        packages={**package_versions(OV_PACKAGES), "openvino-runtime": installed("openvino") or "absent"},
        extra={
            "folder": str(folder),
            "quantization": manifest["quantization"],
            "calibration_sha256": manifest.get("calibration_sha256"),
            "cpu": manifest.get("cpu"),  # the quantising machine's; this machine's are in openvino_runtime
            "inference_precision": manifest["inference_precision"],
            "openvino_runtime": runtime_properties(model.request),
        },
    )


class Int8CrossEncoder:
    """``bge-v2-m3-int8``: int8 sequence-classification model, sigmoid of its one logit."""

    def __init__(self, folder: Path, *, model_id: str = INT8_MODEL) -> None:
        self.model, self.tokenizer, manifest = _load(folder, "text-classification")
        self.max_length = int(manifest["max_length"])
        self._meta = _meta(
            model_id,
            manifest,
            folder,
            "OpenVINO int8 OVModelForSequenceClassification, CrossEncoder pair tokenisation, sigmoid",
            self.model,
        )
        self.log = RecordLog()

    @property
    def meta(self) -> RerankerMeta:
        return self._meta

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        docs = list(passages)
        if not docs:
            return self.log.add(make_result([], max_input_tokens=0, truncated_pairs=0, chunk_size=0))
        enc = self.tokenizer(
            [query] * len(docs),
            docs,
            padding=True,
            truncation="longest_first",
            max_length=self.max_length,
            return_tensors="np",
        )
        logits = np.asarray(self.model(**enc).logits, dtype=np.float32).reshape(len(docs), -1)[:, 0]
        scores = (1.0 / (1.0 + np.exp(-logits.astype(np.float64)))).astype(np.float32)
        lengths = [int(n) for n in enc["attention_mask"].sum(axis=1)]
        cut = 0
        for doc, n in zip(docs, lengths, strict=True):
            if n >= self.max_length:  # only a full-length input can have been cut
                cut += len(self.tokenizer(query, doc, truncation=False)["input_ids"]) > self.max_length
        return self.log.add(
            make_result(scores, max_input_tokens=max(lengths), truncated_pairs=cut, chunk_size=len(docs))
        )


class Int8BiEncoder:
    """int8 stand-in: quantised all-MiniLM-L6-v2, cosine of mean-pooled, L2-normalised embeddings."""

    def __init__(self, folder: Path, *, model_id: str = "minilm-standin-int8") -> None:
        self.model, self.tokenizer, manifest = _load(folder, "feature-extraction")
        self.max_length = int(manifest["max_length"])
        self._meta = _meta(
            model_id,
            manifest,
            folder,
            "OpenVINO int8 OVModelForFeatureExtraction, mean pooling, cosine (stand-in, not a plan model)",
            self.model,
        )
        self.log = RecordLog()

    @property
    def meta(self) -> RerankerMeta:
        return self._meta

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """(L2-normalised embeddings, input lengths after truncation)."""
        enc = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="np"
        )
        hidden = np.asarray(self.model(**enc).last_hidden_state, dtype=np.float32)
        mask = enc["attention_mask"].astype(np.float32)[:, :, None]
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        lengths = [int(n) for n in enc["attention_mask"].sum(axis=1)]
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32), lengths

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        docs = list(passages)
        if not docs:
            return self.log.add(make_result([], max_input_tokens=0, truncated_pairs=0, chunk_size=0))
        q, q_len = self.encode([query])
        d, lengths = self.encode(docs)
        scores = (d @ q[0]).astype(np.float32)
        full = [len(x) for x in self.tokenizer([*docs, query], add_special_tokens=True)["input_ids"]]
        cut = sum(n > self.max_length for n in full[:-1]) + (len(docs) if full[-1] > self.max_length else 0)
        return self.log.add(
            make_result(
                scores,
                max_input_tokens=max([*lengths, *q_len]),
                truncated_pairs=min(cut, len(docs)),
                chunk_size=len(docs),
            )
        )
