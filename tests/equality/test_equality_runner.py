"""Result files, ``outcome``, check 3 and ``bench check-adapters`` wiring (fake adapters and references)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.cli import cli
from bench.core.errors import BenchError
from bench.equality import outcome
from bench.equality.data import EqualityQuery, EqualitySet
from bench.equality.pointwise import run_pointwise
from bench.equality.results import write_result
from bench.equality.runner import check_one
from tests.support.fakes import FakeReranker, text_score


def fake(model_id: str, listwise_shift: float = 0.0) -> FakeReranker:
    """Scores by a CRC-32 of the passage; ``listwise_shift`` adds a list-length term (not pointwise); 10
    billed tokens a passage in its call records."""
    return FakeReranker(model_id, score="crc32", list_shift=listwise_shift, billed_tokens=10)


@pytest.fixture
def data(queries_factory: Any) -> EqualitySet:
    return EqualitySet(tuple(queries_factory(3, 100)), {"id_map_matching": {}})


def test_write_and_read_outcome(tmp_path: Path) -> None:
    assert outcome("bge-v2-m3", tmp_path)["rated"] is False  # no file: not rated, says which command
    assert (
        "docker compose run --rm bench check-adapters bge-v2-m3" in outcome("bge-v2-m3", tmp_path)["reason"]
    )
    write_result("bge-v2-m3", {"model": "bge-v2-m3", "rated": True, "reason": "ok"}, tmp_path)
    assert outcome("bge-v2-m3", tmp_path) == {
        "model": "bge-v2-m3",
        "rated": True,
        "reason": "ok",
        "missing": False,
        "file": str(tmp_path / "bge-v2-m3.json"),
    }
    with pytest.raises(ValueError):
        write_result("bge-v2-m3", {"rated": "yes"}, tmp_path)
    (tmp_path / "gte-base.json").write_text('{"rated": true}')
    with pytest.raises(BenchError, match="reason"):
        outcome("gte-base", tmp_path)
    (tmp_path / "jina-v3.5.json").write_text("{broken")
    with pytest.raises(BenchError, match=r"jina-v3\.5\.json:1"):
        outcome("jina-v3.5", tmp_path)


def test_pointwise_check(data: EqualitySet, tmp_path: Path) -> None:
    result = run_pointwise("voyage-rerank-3", fake("voyage-rerank-3"), data.queries)
    assert result["pointwise"] is True and result["max_abs_diff"] == 0.0
    assert result["billed_tokens"] == 3 * 10 * (20 + 100)
    write_result("voyage-rerank-3", result, tmp_path)
    assert outcome("voyage-rerank-3", tmp_path)["pointwise"] is True
    listwise = run_pointwise("voyage-rerank-3-lite", fake("voyage-rerank-3-lite", 1e-4), data.queries)
    assert listwise["pointwise"] is False  # 80 x 1e-4 = 0.008 > 0.001
    assert "every depth is requested separately" in listwise["reason"]
    tiny = run_pointwise("voyage-rerank-3-lite", fake("voyage-rerank-3-lite", 1e-6), data.queries)
    assert tiny["pointwise"] is True  # 80 x 1e-6 is within 0.001


def test_check_one_local_with_fake_reference(data: EqualitySet, tmp_path: Path) -> None:
    def loader(model_id: str, **kw: Any) -> FakeReranker:
        return fake(model_id)

    def good(spec: Any, queries: Sequence[EqualityQuery]) -> dict[str, Any]:
        return {"scores": {q.qid: [2 * text_score(p) for p in q.passages] for q in queries}, "versions": {}}

    result = check_one("bge-v2-m3", data, loader=loader, model_dir=tmp_path, runner=good)
    assert result["rated"] is True and result["min_spearman"] == pytest.approx(1.0)
    assert [f["label"] for f in result["further_references"]] == ["card-seqcls@tf457"]
    json.dumps(result, allow_nan=False)  # JSON-ready
    assert not any("passages" in json.dumps(r) for r in result["queries"])  # ids and numbers only


def test_check_one_adapter_that_does_not_load(data: EqualitySet) -> None:
    def loader(model_id: str, **kw: Any) -> FakeReranker:
        raise BenchError("snapshot missing; run `bench models fetch gte-base`")

    result = check_one("gte-base", data, loader=loader, model_dir=Path("/x"))
    assert result["rated"] is False and "bench models fetch gte-base" in result["reason"]


def test_check_one_voyage_api_failure(data: EqualitySet) -> None:
    def loader(model_id: str, **kw: Any) -> FakeReranker:
        raise BenchError("No Voyage API key")

    result = check_one("voyage-rerank-3", data, loader=loader)
    assert result["rated"] is False and result["reason"].startswith("API check failed")


@pytest.mark.parametrize("agree", [True, False])
def test_cli_check_adapters(
    data: EqualitySet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agree: bool
) -> None:
    import bench.equality.runner as runner_mod
    import bench.records.guard
    import bench.records.provenance

    seen: list[str] = []
    monkeypatch.setattr(
        bench.records.guard, "preflight", lambda kind, **kw: seen.append(kind) or {"kind": kind}
    )
    monkeypatch.setattr("bench.records.codeversion.require_clean_code", lambda root=None: {})
    monkeypatch.setattr(runner_mod, "load_equality_set", lambda **kw: data)
    monkeypatch.setattr(runner_mod, "_default_loader", lambda model_id, **kw: fake(model_id))
    monkeypatch.setattr(runner_mod, "_model_dir", lambda model_id: tmp_path)

    def fake_reference(
        spec: Any, model_dir: Path, queries: Sequence[EqualityQuery], **kw: Any
    ) -> dict[str, Any]:
        sign = 1.0 if agree else -1.0
        return {
            "scores": {q.qid: [sign * text_score(p) for p in q.passages] for q in queries},
            "versions": {},
        }

    monkeypatch.setattr(  # check_models runs every reference in one batch per environment
        runner_mod,
        "run_reference_batch",
        lambda jobs, queries, **kw: [fake_reference(spec, mdir, queries) for spec, mdir in jobs],
    )
    monkeypatch.setattr("bench.equality.cli.require_cuda_for_checks", lambda device: None)  # CUDA stand-in
    out_dir = tmp_path / "results"
    res = CliRunner().invoke(cli, ["check-adapters", "bge-v2-m3", "--checks", str(out_dir)])
    assert seen == ["measurement"]
    payload = json.loads((out_dir / "bge-v2-m3.json").read_text())
    assert (payload["device"], payload["dtype"]) == ("cuda", "float16")  # what bench quality scores with
    assert payload["manifest"]["kind"] == "adapter-check" and len(payload["plan_sha256"]) == 64
    assert payload["preflight"] == {"kind": "measurement"}
    if agree:
        assert res.exit_code == 0, res.output
        assert payload["verdict"] == "rated"
    else:
        assert res.exit_code == 1
        assert "not rated: bge-v2-m3" in res.output
        assert payload["verdict"] == "not rated" and payload["min_spearman"] == pytest.approx(-1.0)


def test_cli_rejects_unknown_model() -> None:
    res = CliRunner().invoke(cli, ["check-adapters", "no-such-model"])
    assert res.exit_code == 2 and "no-such-model" in res.output


def test_check_one_adapter_that_fails_while_scoring(data: EqualitySet, tmp_path: Path) -> None:
    def oom(_: FakeReranker, query: str, passages: Sequence[str]) -> None:
        raise RuntimeError("CUDA out of memory")

    broken = FakeReranker("qwen3-4b", score="crc32", on_call=oom)
    result = check_one("qwen3-4b", data, loader=lambda m, **kw: broken, model_dir=tmp_path)
    assert result["rated"] is False and "RuntimeError: CUDA out of memory" in result["reason"]


def test_check_models_goes_on_after_load_failures(
    data: EqualitySet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OSError or RuntimeError from one model's load is that model's "not rated" result with the
    exception text; every other model still gets its result file."""
    import bench.equality.runner as runner_mod
    from bench.equality.runner import check_models

    monkeypatch.setattr(runner_mod, "_model_dir", lambda model_id: tmp_path)
    monkeypatch.setattr(
        runner_mod,
        "run_reference_batch",
        lambda jobs, queries, **kw: [
            {"scores": {q.qid: [text_score(p) for p in q.passages] for q in queries}, "versions": {}}
            for _ in jobs
        ],
    )

    def loader(model_id: str, **kw: Any) -> FakeReranker:
        if model_id == "gte-base":
            raise OSError("config.json: No such file")
        if model_id == "bge-v2-m3":
            raise RuntimeError("CUDA error: out of memory")
        if model_id == "voyage-rerank-3":
            raise ValueError("unexpected API answer")
        return fake(model_id)

    models = ["gte-base", "bge-v2-m3", "voyage-rerank-3", "qwen3-0.6b"]
    out = check_models(
        models, data, directory=tmp_path / "r", loader=loader, manifest=lambda **kw: {"plan_sha256": "0" * 64}
    )
    assert [p["model"] for p in out] == models
    files = {m: json.loads((tmp_path / "r" / f"{m}.json").read_text(encoding="utf-8")) for m in models}
    assert files["gte-base"]["rated"] is False
    assert files["gte-base"]["reason"] == "adapter did not load: OSError: config.json: No such file"
    assert files["bge-v2-m3"]["reason"] == "adapter did not load: RuntimeError: CUDA error: out of memory"
    assert files["voyage-rerank-3"]["reason"] == "API check failed: ValueError: unexpected API answer"
    assert files["qwen3-0.6b"]["rated"] is True, files["qwen3-0.6b"]["reason"]
