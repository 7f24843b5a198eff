"""The tiny int8 feature-extraction model that several int8 tests score (tests/int8/conftest.py makes it
once per test process): a tiny random BERT quantised by the study's code and configuration
(``bench.int8.quantize.quantize_model`` with ``CHOSEN``), as the rehearsal's int8 stand-in is.

Its vocabulary spells any lower-cased word letter by letter (``##`` pieces) besides a few whole words, so
real German text (the bundled queries and passages that ``benchmarks/bench_int8_isa.py --pool`` feeds it)
gets scores that differ between passages, as the stand-in's do."""

from __future__ import annotations

import json
import shutil
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


# what ``quantize_model`` imports on its first call (optimum-intel's exporter and quantiser, nncf, OpenVINO)
QUANTIZE_IMPORTS = (
    "torch",
    "transformers",
    "openvino",
    "nncf",
    "optimum.intel",
    "optimum.intel.openvino.quantization",
    "optimum.exporters.openvino",
)


def ready_to_quantize() -> None:
    """Import what quantising imports, then freeze the process's long-lived objects (tests/support/heap.py):
    the full collections optimum-intel's export runs then look at what the quantisation makes."""
    import importlib

    from tests.support.heap import freeze_long_lived

    for name in QUANTIZE_IMPORTS:
        importlib.import_module(name)
    freeze_long_lived()


def build_tiny_int8(base: Path) -> TinyInt8:
    from bench.int8.quantize import quantize_model
    from bench.rerankers.openvino.config import CHOSEN
    from tests.support.tiny_models import build_bert

    ready_to_quantize()

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


def shared_tiny_int8(base: Path) -> TinyInt8:
    """The tiny int8 model in ``base``: made there by the first caller (``done.json`` written last, so a
    half-made folder of a crashed maker is made again), read by the others. The caller holds a lock that
    keeps two makers apart (tests/int8/conftest.py)."""
    done = base / "done.json"
    if done.is_file():
        raw = json.loads(done.read_text(encoding="utf-8"))
        return TinyInt8(
            Path(raw["bert"]), Path(raw["folder"]), [(q, p) for q, p in raw["pairs"]], raw["max_length"]
        )
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    made = build_tiny_int8(base)
    record = {
        "bert": str(made.bert),
        "folder": str(made.folder),
        "pairs": made.pairs,
        "max_length": made.max_length,
    }
    done.write_text(json.dumps(record), encoding="utf-8")
    return made
