"""Pinned snapshots: missing, wrong revision, explicit folders, gte's separate remote code; `bench models`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.errors import BenchError
from bench.rerankers.cli import models
from bench.rerankers.registry import load_reranker, spec_for
from bench.rerankers.snapshots import SnapshotSpec, resolve_snapshot, snapshot_path

SPEC = SnapshotSpec("m", "Org/Name", "a" * 40)


def _make(root: Path, repo: str, rev: str, files: tuple[str, ...] = ("config.json",)) -> Path:
    path = snapshot_path(repo, rev, root)
    path.mkdir(parents=True)
    for f in files:
        (path / f).write_text("{}")
    return path


def test_missing_snapshot_names_model_and_fetch_command(tmp_path: Path) -> None:
    with pytest.raises(BenchError) as err:
        resolve_snapshot(SPEC, root=tmp_path)
    assert (
        "Model m" in err.value.message
        and "docker compose run --rm bench-cpu models fetch m" in err.value.message
    )


def test_wrong_revision_lists_present_ones(tmp_path: Path) -> None:
    _make(tmp_path, "Org/Name", "b" * 40)
    with pytest.raises(BenchError, match="Present revisions: " + "b" * 40):
        resolve_snapshot(SPEC, root=tmp_path)
    good = _make(tmp_path, "Org/Name", "a" * 40)
    assert resolve_snapshot(SPEC, root=tmp_path) == good


def test_explicit_dir_must_be_named_by_revision(tmp_path: Path) -> None:
    other = _make(tmp_path, "Org/Name", "c" * 40)
    with pytest.raises(BenchError, match="not a snapshot at the pinned revision"):
        resolve_snapshot(SPEC, other)
    empty = snapshot_path("Org/Name", "a" * 40, tmp_path)
    empty.mkdir(parents=True)
    with pytest.raises(BenchError, match="incomplete"):
        resolve_snapshot(SPEC, empty)


def test_gte_needs_new_impl_at_the_code_revision(tmp_path: Path) -> None:
    spec = spec_for("gte-base")
    assert spec.code_repo == "Alibaba-NLP/new-impl" and spec.code_revision is not None
    weights = _make(tmp_path, spec.repo, spec.revision)
    _make(tmp_path, spec.code_repo, "0" * 40, ("modeling.py",))
    with pytest.raises(BenchError, match="remote code Alibaba-NLP/new-impl"):
        resolve_snapshot(spec, root=tmp_path)
    _make(tmp_path, spec.code_repo, spec.code_revision, ("modeling.py",))
    assert resolve_snapshot(spec, root=tmp_path) == weights
    assert resolve_snapshot(spec, weights) == weights


def test_load_reranker_refuses_missing_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_MODELS_DIR", str(tmp_path))
    for model_id in ("qwen3-4b", "jina-v3.5", "querit-4b", "gte-base"):
        with pytest.raises(BenchError, match=f"bench-cpu models fetch {model_id}"):
            load_reranker(model_id)


def test_models_list_and_fetch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_MODELS_DIR", str(tmp_path))
    spec = spec_for("bge-v2-m3")
    _make(tmp_path, spec.repo, spec.revision)
    out = CliRunner().invoke(models, ["list"])
    assert out.exit_code == 0, out.output
    assert "bge-v2-m3\tBAAI/bge-reranker-v2-m3@" in out.output and "present" in out.output
    assert "missing\tdocker compose run --rm bench-cpu models fetch qwen3-4b" in out.output

    calls: list[tuple[str, str]] = []

    def fake_download(repo: str, *, revision: str, cache_dir: Path) -> str:
        calls.append((repo, revision))
        return str(_make(Path(cache_dir), repo, revision))

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    out = CliRunner().invoke(models, ["fetch", "gte-base"])
    assert out.exit_code == 0, out.output
    gte = spec_for("gte-base")
    assert calls == [(gte.repo, gte.revision), (gte.code_repo, gte.code_revision)]
    assert CliRunner().invoke(models, ["fetch"]).exit_code != 0
