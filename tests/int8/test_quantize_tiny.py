"""The one quantisation function on a tiny random BERT, both paths (cross-encoder and feature extraction):
export, static int8 through optimum-intel, manifest, the adapters' scores against the fp32 model's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.int8.quantize import quantize_model
from bench.rerankers.openvino.adapter import Int8BiEncoder, Int8CrossEncoder
from bench.rerankers.openvino.config import CHOSEN
from bench.rerankers.openvino.manifest import MANIFEST, verify_folder
from tests.int8.tiny_int8 import PAIRS, WORDS, TinyInt8, ready_to_quantize
from tests.support.tiny_models import build_bert

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ready_to_quantize()  # tests/int8/conftest.py: the export's collections look at the quantisation's objects
    return build_bert(tmp_path_factory.mktemp("tiny") / "bert")


def test_cross_encoder_path(tiny: Path, tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    out = tmp_path / "q"
    manifest = quantize_model(
        tiny,
        out,
        task="text-classification",
        pairs=PAIRS,
        spec=CHOSEN,
        max_length=16,
        record={"source_model": "tiny", "source_revision": "r0"},
    )
    assert manifest == verify_folder(out)
    assert manifest["calibration_samples"] == manifest["calibration_samples_used"] == len(PAIRS)
    assert manifest["max_length"] == 16
    assert any(name.endswith(".xml") for name in manifest["files"]) and (out / MANIFEST).is_file()
    model = Int8CrossEncoder(out)
    query, docs = WORDS[5], [*WORDS, " ".join(WORDS)]  # the last pair is longer than 16 tokens
    res = model.score(query, docs)
    assert res.record["truncated_pairs"] == 1 and res.record["max_input_tokens"] == 16
    tok = AutoTokenizer.from_pretrained(str(tiny))
    fp = AutoModelForSequenceClassification.from_pretrained(str(tiny)).eval()
    enc = tok(
        [query] * len(docs),
        docs,
        padding=True,
        truncation="longest_first",
        max_length=16,
        return_tensors="pt",
    )
    with torch.inference_mode():
        ref = torch.sigmoid(fp(**enc).logits[:, 0].float()).numpy()
    # the random tiny model's scores differ by ~1e-5 between pairs, so a rank check says nothing here;
    # the int8 scores must be within int8 rounding of the fp32 ones, and the graph must really be int8
    assert np.max(np.abs(res.scores - ref)) < 0.002
    xml = next(out.glob("*.xml")).read_text()
    assert xml.count('type="FakeQuantize"') >= 4
    assert model.meta.revision == "r0" and model.meta.id == "bge-v2-m3-int8"


def test_feature_extraction_path(tiny_int8: TinyInt8) -> None:
    """On the session's tiny int8 feature-extraction model (tests/int8/tiny_int8.py: ``quantize_model`` with
    this file's ``PAIRS``, made once for this file and tests/int8/test_isa_benchmark.py)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    out, source = tiny_int8.folder, tiny_int8.bert
    assert tiny_int8.pairs == PAIRS
    assert verify_folder(out)["calibration_samples_used"] == 2 * len(PAIRS)  # query and passage of each pair
    model = Int8BiEncoder(out)
    res = model.score(WORDS[5], WORDS)
    tok = AutoTokenizer.from_pretrained(str(source))
    fp = AutoModel.from_pretrained(str(source)).eval()
    with torch.inference_mode():
        enc = tok(
            [WORDS[5], *WORDS],
            padding=True,
            truncation=True,
            max_length=tiny_int8.max_length,
            return_tensors="pt",
        )
        hidden = fp(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        emb = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=1).numpy()
    ref = emb[1:] @ emb[0]
    assert np.max(np.abs(res.scores - ref)) < 0.05
    with pytest.raises(Exception, match="a feature-extraction model, expected text-classification"):
        Int8CrossEncoder(out)
    rt = model.meta.extra["openvino_runtime"]
    assert rt["inference_precision"] == "f32" and rt["requested"] == {"INFERENCE_PRECISION_HINT": "f32"}
    assert isinstance(rt["threads"], int) and rt["threads"] >= 1 and isinstance(rt["streams"], int)
    assert rt["execution_mode"] in ("PERFORMANCE", "ACCURACY")
    # the int8 products ran on a named instruction set of this CPU (avx2 here, vnni/amx on a Xeon)
    assert rt["int8_kernels"] and rt["int8_isa"] is not None
    assert rt["cpu"]["flags"] is not None and "bf16" in rt["cpu"]


def test_compile_refuses_an_openvino_that_ignores_the_precision(tmp_path: Path) -> None:
    from bench.core.errors import BenchError
    from bench.rerankers.openvino.runtime import compile_int8

    class Compiled:
        def get_property(self, name: str) -> object:
            return {"INFERENCE_PRECISION_HINT": "bf16"}.get(name, 1)

        def get_runtime_model(self) -> object:
            return type("M", (), {"get_ops": lambda self: []})()

    seen: dict[str, object] = {}

    class Model:
        request = Compiled()

        @classmethod
        def from_pretrained(cls, path: str, **kwargs: object) -> Model:
            seen.update(kwargs)
            return cls()

    with pytest.raises(BenchError, match="inference precision 'bf16' although 'f32' was set"):
        compile_int8(Model, tmp_path)
    assert seen["ov_config"] == {"INFERENCE_PRECISION_HINT": "f32"}
