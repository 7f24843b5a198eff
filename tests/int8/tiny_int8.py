"""The tiny int8 feature-extraction model that several int8 tests score (tests/int8/conftest.py makes it
once per test process): a tiny random BERT quantised by the study's code and configuration
(``bench.int8.quantize.quantize_model`` with ``CHOSEN``), as the rehearsal's int8 stand-in is.

Its vocabulary spells any lower-cased word letter by letter (``##`` pieces) besides a few whole words, so
real German text (the bundled queries and passages that ``benchmarks/bench_int8_isa.py --pool`` feeds it)
gets scores that differ between passages, as the stand-in's do."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

WORDS = [
    "berlin ist die hauptstadt",
    "hamburg liegt im norden",
    "der rhein ist ein fluss",
    "die katze im garten",
    "münchen bayern",
    "was ist die hauptstadt ?",
    "zug",
    "der hund und die katze",
]
PAIRS = [(WORDS[i % 8], WORDS[(3 * i + 1) % 8] + " " + WORDS[(5 * i + 2) % 8]) for i in range(24)]
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
VOCAB = [
    *dict.fromkeys(w for text in WORDS for w in text.split()),
    *_ALNUM,
    *".,?!:;-()'\"",
    *(f"##{c}" for c in _ALNUM),
]
MAX_LENGTH = 64


@dataclass(frozen=True)
class TinyInt8:
    bert: Path  # the fp32 source (BertModel, no classifier head)
    folder: Path  # the int8 feature-extraction folder (read it, never change it)
    pairs: list[tuple[str, str]]  # the calibration pairs
    max_length: int


def build_tiny_int8(base: Path) -> TinyInt8:
    from bench.int8.quantize import quantize_model
    from bench.rerankers.openvino.config import CHOSEN
    from tests.support.tiny_models import build_bert

    bert = build_bert(base / "bert", words=VOCAB, model_max_length=None, classifier=False)
    folder = base / "int8-fe"
    quantize_model(
        bert,
        folder,
        task="feature-extraction",
        pairs=PAIRS,
        spec=CHOSEN,
        max_length=MAX_LENGTH,
        record={"source_model": "tiny"},
    )
    return TinyInt8(bert, folder, list(PAIRS), MAX_LENGTH)
