"""Querit (mteb 2.24.3 QueritWrapper input format) and jina (listwise model.rerank) on fake models."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bench.core.errors import BenchError
from bench.rerankers.jina import JinaListwise
from bench.rerankers.protocol import RerankerMeta
from bench.rerankers.querit import TEMPLATE, QueritReranker, content_cls_mask, querit_length
from tests.support.tiny_models import build_word_tokenizer

META = RerankerMeta(
    id="t", model="org/t", revision="r", dtype="float32", device="cpu", chunk_size=None, listwise=False
)


class SumScore:
    """Stands in for Querit's remote model: score = sum of attended [CLS]-row positions weighted by id."""

    def __call__(self, input_ids: Any, attention_mask: Any) -> dict[str, Any]:
        cls_row = attention_mask[:, 0, -1, :].float()  # what the final [CLS] attends to
        return {"score": ((input_ids.float() % 7 + 1) * cls_row).sum(-1, keepdim=True)}


@pytest.fixture(scope="module")
def querit() -> QueritReranker:
    tok = build_word_tokenizer(model_max_length=41)
    return QueritReranker(META, SumScore(), tok)


def test_length_rule_and_mask() -> None:
    assert querit_length(build_word_tokenizer(model_max_length=1025)) == 1024
    assert querit_length(build_word_tokenizer(model_max_length=10**30)) == 4095
    m = content_cls_mask([0, 0, 1, 1, 2])[0]
    assert m.shape == (5, 5) and not m[:2].any() and not m[:, :2].any()
    assert m[2].tolist() == [False, False, True, False, False]
    assert m[3].tolist() == [False, False, True, True, False]
    assert m[4].tolist() == [False, False, True, True, True]


def test_inputs_are_left_padded_to_the_maximum_with_cls_last(querit: QueritReranker) -> None:
    assert querit.length == 40
    chunk = querit._chunk("Berlin", ["Zug", "Hamburg liegt im Norden " * 20])
    ids, mask = chunk.features["input_ids"], chunk.features["attention_mask"]
    assert ids.shape == (2, 40) and mask.shape == (2, 1, 40, 40) and mask.dtype.is_floating_point is False
    assert (ids[:, -1] == querit.cls_id).all()
    n = len(querit.tok(TEMPLATE.format(query="Berlin", doc="Zug"), add_special_tokens=False)["input_ids"]) + 1
    assert chunk.lengths == [n, 40] and chunk.truncated == [False, True]
    assert (ids[0, : 40 - n] == querit.pad_id).all()
    res = querit.score("Berlin", ["Zug", "Hamburg liegt im Norden " * 20])
    assert res.record["truncated_pairs"] == 1 and res.record["max_input_tokens"] == 40
    assert res.scores.dtype == np.float32


def test_querit_needs_cls_token() -> None:
    from transformers import PreTrainedTokenizerFast

    tok = build_word_tokenizer()
    vocab = {k: v for k, v in tok.get_vocab().items() if k != "[CLS]"}
    from tokenizers import Tokenizer, models

    bare = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")))
    with pytest.raises(BenchError, match=r"\[CLS\]"):
        QueritReranker(META, SumScore(), bare)


class FakeJina:
    def __init__(self, results: list[dict[str, Any]] | None = None) -> None:
        self.results = results
        self.seen: list[str] = []

    def rerank(self, query: str, documents: list[str]) -> list[dict[str, Any]]:
        self.seen = documents
        if self.results is not None:
            return self.results
        scored = [
            {"index": i, "relevance_score": 1.0 / (1 + len(d)), "document": d}
            for i, d in enumerate(documents)
        ]
        return sorted(scored, key=lambda r: -r["relevance_score"])


def test_jina_maps_sorted_results_back_to_input_order() -> None:
    fake = FakeJina()
    jina = JinaListwise(META, fake, build_word_tokenizer())
    docs = ["Berlin ist die Hauptstadt", "Zug", "Hamburg liegt im Norden"]
    res = jina.score("Berlin", docs)
    assert fake.seen == docs  # first-stage order reaches the model
    np.testing.assert_allclose(res.scores, [1.0 / (1 + len(d)) for d in docs], rtol=1e-6)
    assert res.record["n"] == 3 and res.record["chunk_size"] == 3
    # FakeJina has no model to observe: the length of the real input is unknown, and says so
    assert res.record["max_input_tokens"] is None and res.record["truncated_pairs"] is None
    assert "no input embeddings" in res.record["tokens_unmeasured"]


def listwise_model(tokenizer: Any) -> Any:
    """Like jina's listwise ``rerank``: one model input holds a prompt, the query and every document; the
    length of that input, not of a document, is what ``max_input_tokens`` must report."""
    import torch  # heavy: kept out of the module's top so that collecting this file does not load torch

    class ListwiseModel(torch.nn.Module):
        PROMPT = ("[CLS]", "berlin", "ist")  # stands in for the vendor's instruction and special tokens

        def __init__(self, tokenizer: Any) -> None:
            super().__init__()
            self.tok = tokenizer
            self.embed = torch.nn.Embedding(len(tokenizer.get_vocab()) + 1, 4)
            self.inputs: list[int] = []

        def get_input_embeddings(self) -> torch.nn.Module:
            return self.embed

        def rerank(self, query: str, documents: list[str]) -> list[dict[str, Any]]:
            words = [*self.PROMPT, *query.lower().split()]
            for d in documents:
                words += d.lower().split()
            ids = torch.tensor([self.tok.convert_tokens_to_ids(words)])
            self.inputs.append(ids.shape[1])
            hidden = self.embed(ids)[0]
            return [{"index": i, "relevance_score": float(hidden[i].sum())} for i in range(len(documents))]

    return ListwiseModel(tokenizer)


def test_jina_records_the_length_of_the_real_model_input() -> None:
    tok = build_word_tokenizer()
    model = listwise_model(tok)
    docs = ["Berlin ist die Hauptstadt", "Zug", "Hamburg liegt im Norden"]
    res = JinaListwise(META, model, tok).score("Berlin", docs)
    doc_only = max(len(tok(d, add_special_tokens=False)["input_ids"]) for d in docs)
    assert model.inputs == [3 + 1 + 4 + 1 + 4]  # prompt, query, every document
    assert res.record["max_input_tokens"] == model.inputs[0] > doc_only
    assert res.record["truncated_pairs"] == 0 and "tokens_unmeasured" not in res.record


@pytest.mark.parametrize(
    "results",
    [
        [{"index": 0, "relevance_score": 1.0}],
        [{"index": 0, "relevance_score": 1.0}, {"index": 0, "relevance_score": 0.5}],
        [{"index": 0, "relevance_score": 1.0}, {"index": 5, "relevance_score": 0.5}],
    ],
)
def test_jina_refuses_incomplete_or_bad_results(results: list[dict[str, Any]]) -> None:
    with pytest.raises(BenchError, match=r"jina-v3\.5"):
        JinaListwise(META, FakeJina(results), None).score("q", ["a", "b"])
