"""Adapter checks run on the device and dtype the scores are produced with (by default
the ones `bench quality` uses), the result file records both, and `bench quality` and the latency commands
refuse a model whose passed check was in another setting, naming both. The CPU stands in for CUDA where
a model has to load; the CUDA refusal itself is tested with CUDA absent (this machine) and stubbed."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import pytest
from click.testing import CliRunner

from bench.cli import cli
from bench.core.errors import BenchError
from bench.equality.data import EqualitySet
from bench.equality.results import (
    SCORING_DEVICE,
    check_command,
    outcome_for,
    result_path,
    scoring_setting,
    write_result,
)
from bench.rerankers.base import VENDOR_DTYPE
from tests.support.fakes import FakeReranker, text_score


def _default(command: click.Command, name: str) -> Any:
    (param,) = [p for p in command.params if p.name == name]
    return param.default


def test_the_check_defaults_to_the_setting_bench_quality_scores_with() -> None:
    from bench.equality.cli import check_adapters
    from bench.latency.presets import PRESETS
    from bench.quality.cli import determinism, quality

    assert _default(check_adapters, "device") == SCORING_DEVICE == "cuda"  # was "cpu" (fp32) before
    assert _default(quality, "device") == _default(determinism, "device") == SCORING_DEVICE
    assert PRESETS["gpu"].device == SCORING_DEVICE and _default(check_adapters, "dtype") is None
    for model, dtype in VENDOR_DTYPE.items():
        assert scoring_setting(model) == {"device": "cuda", "dtype": dtype}
        assert scoring_setting(model, "cuda:1") == {"device": "cuda", "dtype": dtype}
        assert scoring_setting(model, "cpu") == {"device": "cpu", "dtype": "float32"}
    assert scoring_setting("voyage-rerank-3", "cpu") == {"device": "api", "dtype": "api"}


def test_a_cuda_check_without_cuda_is_refused_before_anything(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the refusal is for machines without it")
    out = tmp_path / "checks"
    res = CliRunner().invoke(cli, ["check-adapters", "bge-v2-m3", "--checks", str(out)])
    assert res.exit_code == 1 and "torch.cuda.is_available() is False" in res.output
    assert "pass --device cpu" in res.output and not out.exists()


@pytest.fixture
def data(queries_factory: Any) -> EqualitySet:
    return EqualitySet(tuple(queries_factory(3, 100)), {"id_map_matching": {}})


@pytest.mark.parametrize(
    ("device", "dtype", "name", "recorded"),
    [
        ("cuda", None, "bge-v2-m3.json", ("cuda", "float16")),
        ("cpu", None, "bge-v2-m3@cpu-float32.json", ("cpu", "float32")),
        ("cuda", "bfloat16", "bge-v2-m3@cuda-bfloat16.json", ("cuda", "bfloat16")),
    ],
)
def test_the_result_file_records_device_and_dtype(
    data: EqualitySet,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    device: str,
    dtype: str | None,
    name: str,
    recorded: tuple[str, str],
) -> None:
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
    seen: list[dict[str, Any]] = []

    def loader(model_id: str, **kw: Any) -> FakeReranker:
        seen.append(kw)
        return FakeReranker(model_id, score="crc32")

    check_models(
        ["bge-v2-m3"],
        data,
        device=device,
        dtype=dtype,
        directory=tmp_path / "r",
        loader=loader,
        manifest=lambda **kw: {"plan_sha256": "0" * 64},
    )
    assert [p.name for p in (tmp_path / "r").iterdir()] == [name]
    payload = json.loads((tmp_path / "r" / name).read_text())
    assert (payload["device"], payload["dtype"]) == recorded and payload["rated"] is True
    assert payload["dtype_loaded"] == "float32"  # what the (fake) adapter reported loading
    assert seen[0]["device"] == device and seen[0].get("dtype") == dtype
    assert outcome_for("bge-v2-m3", tmp_path / "r", device, dtype)["rated"] is True


def _write(directory: Path, model: str, device: str, dtype: str, rated: bool = True) -> Path:
    payload = {"model": model, "rated": rated, "reason": "test", "device": device, "dtype": dtype}
    return write_result(model, payload, directory)


def test_outcome_for_names_both_settings(tmp_path: Path) -> None:
    assert _write(tmp_path, "qwen3-4b", "cpu", "float32").name == "qwen3-4b@cpu-float32.json"
    out = outcome_for("qwen3-4b", tmp_path, "cuda")
    assert out["rated"] is False and out["checked_setting"] == {"device": "cpu", "dtype": "float32"}
    assert "passed on device cpu, dtype float32" in out["reason"]
    assert "produced on device cuda, dtype float16" in out["reason"]
    assert "`docker compose run --rm bench check-adapters qwen3-4b`" in out["reason"]
    assert outcome_for("qwen3-4b", tmp_path, "cpu")["rated"] is True
    # the quality default's file in the default setting, next to the CPU one
    assert _write(tmp_path, "qwen3-4b", "cuda", "float16").name == "qwen3-4b.json"
    assert outcome_for("qwen3-4b", tmp_path, "cuda:0")["rated"] is True
    assert outcome_for("qwen3-4b", tmp_path, "cpu")["rated"] is True
    missing = outcome_for("gte-base", tmp_path, "cpu")
    assert missing["missing"] is True
    assert "docker compose run --rm bench-cpu check-adapters gte-base --device cpu" in missing["reason"]
    # a file without device and dtype (written before this rule) holds for no setting
    (tmp_path / "jina-v3.5.json").write_text('{"model": "jina-v3.5", "rated": true, "reason": "old"}')
    old = outcome_for("jina-v3.5", tmp_path, "cuda")
    assert old["rated"] is False and "on device not recorded, dtype not recorded" in old["reason"]
    assert check_command("bge-v2-m3", {"device": "cuda", "dtype": "bfloat16"}).endswith("--dtype bfloat16")
    assert result_path("voyage-rerank-3", tmp_path, {"device": "api", "dtype": "api"}).name == (
        "voyage-rerank-3.json"
    )


def test_quality_refuses_a_model_checked_in_another_setting(tmp_path: Path) -> None:
    from bench.quality.commands import rated

    _write(tmp_path, "bge-v2-m3", "cpu", "float32")
    _write(tmp_path, "gte-base", "cuda", "float16")
    with pytest.raises(BenchError) as err:
        rated(["bge-v2-m3", "gte-base"], tmp_path, device="cuda")
    message = err.value.message
    assert message.startswith("refused: bge-v2-m3: ") and "gte-base" not in message.split("Nothing")[0]
    assert "device cpu, dtype float32" in message and "device cuda, dtype float16" in message
    keep, skipped, _ = rated(["gte-base"], tmp_path, device="cuda")
    assert keep == ["gte-base"] and skipped == {}
    keep, _, _ = rated(["bge-v2-m3"], tmp_path, device="cpu")  # the CPU check holds for CPU scoring
    assert keep == ["bge-v2-m3"]
    with pytest.raises(BenchError, match="dtype float32"):  # a dtype asked for is a setting as well
        rated(["gte-base"], tmp_path, device="cuda", dtype="float32")
    # without a device (judged sample, int8): the default check as before
    assert rated(["bge-v2-m3"], tmp_path)[0] == []


def test_quality_command_refuses_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.quality.cli import quality

    checks = tmp_path / "checks"
    _write(checks, "bge-v2-m3", "cuda", "float16")
    monkeypatch.setattr("bench.quality.cli.repo_root", lambda: tmp_path)
    args = [
        "--study",
        str(tmp_path / "study"),
        "--runs",
        str(tmp_path / "runs"),
        "--checks",
        str(checks),
        "--stage",
        "hybrid-71k",
        "--model",
        "bge-v2-m3",
        "--device",
        "cpu",
    ]
    res = CliRunner().invoke(quality, args)
    assert res.exit_code == 1
    assert "passed on device cuda, dtype float16" in res.output and "device cpu, dtype float32" in res.output
    assert not (tmp_path / "study").exists() and not (tmp_path / "runs").exists()


def test_latency_refuses_a_model_checked_in_another_setting(tmp_path: Path) -> None:
    from bench.latency.commands import unrated_models

    _write(tmp_path, "gte-base", "cuda", "float16")
    with pytest.raises(BenchError) as err:
        unrated_models(["gte-base"], tmp_path, False, device="cpu")  # bench latency cpu: fp32 on the CPU
    message = err.value.message
    assert "device cuda, dtype float16" in message and "device cpu, dtype float32" in message
    assert unrated_models(["gte-base"], tmp_path, False, device="cuda") == {}
    allowed = unrated_models(["gte-base"], tmp_path, True, device="cpu")  # --allow-unrated: not published
    assert "device cpu, dtype float32" in allowed["gte-base"]
    _write(tmp_path, "gte-base", "cpu", "float32")
    assert unrated_models(["gte-base"], tmp_path, False, device="cpu") == {}


def test_only_the_dtype_checks_cpu_session_goes_without_a_check_in_its_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bench dtype-check` compares CPU fp32 with the checked GPU setting (the plan's data-type check), so its
    CPU session uses the GPU check; its GPU session, like every other session, needs its own setting's."""
    import bench.quality.commands as commands
    from bench.quality.cli import dtype_check

    sessions: list[tuple[str, str | None, Any]] = []

    class Stop(Exception):
        pass

    def fake_session(setup: Any, **kw: Any) -> Any:
        sessions.append((setup.device, kw.get("dtype"), kw.get("rated_by")))
        if len(sessions) == 2:
            raise Stop
        return None, None, {}

    monkeypatch.setattr(commands, "run_session", fake_session)
    monkeypatch.setattr("bench.quality.cli.repo_root", lambda: tmp_path)
    res = CliRunner().invoke(dtype_check, ["--checks", str(tmp_path)])
    assert isinstance(res.exception, Stop)
    assert sessions == [("cpu", "float32", ("cuda", None)), ("cuda", None, None)]


def test_the_dtype_checks_cpu_session_is_rated_by_the_check_of_the_gpu_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--gpu cpu` (the runbook test's CUDA stand-in): the CPU session is rated by the check in the GPU
    session's setting (cpu, float32: `<model>@cpu-float32.json`), not by the default `<model>.json`, which
    does not exist then (found by tests/runbook: every model was "not checked")."""
    from bench.quality.commands import rated

    _write(tmp_path, "bge-v2-m3", "cpu", "float32")
    keep, skipped, _ = rated(["bge-v2-m3"], tmp_path, device="cpu", dtype=None)
    assert keep == ["bge-v2-m3"] and skipped == {}
    import bench.quality.commands as commands

    seen: list[Any] = []

    def fake_rated(models: Any, checks_dir: Path, *, device: Any = None, dtype: Any = None) -> Any:
        seen.append((device, dtype))
        raise RuntimeError("stop")

    monkeypatch.setattr(commands, "rated", fake_rated)
    setup = SimpleNamespace(device="cpu", checks_dir=tmp_path)
    for kw in ({"rated_by": ("cuda", None)}, {}):
        with pytest.raises(RuntimeError):
            commands.run_session(
                setup,
                stages=(),
                models=["bge-v2-m3"],
                depths=(),
                resume_hint="",  # type: ignore[arg-type]
                what="",
                dtype="float32",
                **kw,
            )
    assert seen == [("cuda", None), ("cpu", "float32")]
