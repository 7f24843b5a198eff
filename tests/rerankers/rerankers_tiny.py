"""Constants and helpers of the reranker tests; the tiny models come from ``bench.rerankers.testing``."""

from __future__ import annotations

from pathlib import Path

from bench.rerankers.testing import build_bert, build_qwen3, build_word_tokenizer, tiny_snapshot

__all__ = ["LONG", "PASSAGES", "QUERY", "build_bert", "build_qwen3", "build_word_tokenizer", "qwen_dir"]


def qwen_dir(models_root: Path, model_id: str = "qwen3-0.6b") -> Path:
    return tiny_snapshot(model_id, models_root)


PASSAGES = [
    "Berlin ist die Hauptstadt von Deutschland",
    "Hamburg liegt im Norden",
    "München Bayern",
    "Die Katze und der Hund im Garten",
    "Der Rhein ist ein Fluss " * 3,
    "Zug",
]
QUERY = "Was ist die Hauptstadt von Deutschland?"
LONG = "Berlin ist die Hauptstadt von Deutschland " * 30
