"""Pinned snapshots: missing, wrong revision, explicit folders, gte's separate remote code; `bench models`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.core.errors import BenchError
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


def test_models_fetches_the_embedder_at_the_plans_revision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vector-71k and hybrid-71k need the Arctic snapshot; `bench models` fetches it at
    the revision PLAN.md pins (bench.core.plan.EMBEDDING_MODEL, checked against PLAN.md's text here too)."""
    import huggingface_hub

    from bench.core.paths import repo_root
    from bench.core.plan import EMBEDDING_MODEL
    from bench.firststage.embed import arctic_embedder

    plan_text = (repo_root() / "PLAN.md").read_text(encoding="utf-8")
    assert f"`{EMBEDDING_MODEL.repo}@{EMBEDDING_MODEL.revision}`" in plan_text
    monkeypatch.setenv("BENCH_MODELS_DIR", str(tmp_path))
    with pytest.raises(BenchError) as err:
        arctic_embedder()
    hint = err.value.message.split("`")[1]
    assert hint == "docker compose run --rm bench-cpu models fetch arctic-embed-l-v2.0"
    listed = CliRunner().invoke(models, ["list"])
    assert f"arctic-embed-l-v2.0\t{EMBEDDING_MODEL.repo}@{EMBEDDING_MODEL.revision}\tmissing" in listed.output

    calls: list[tuple[str, str]] = []

    def fake_download(repo: str, *, revision: str, cache_dir: Path) -> str:
        calls.append((repo, revision))
        return str(_make(Path(cache_dir), repo, revision))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    out = CliRunner().invoke(models, hint.split(" models ", 1)[1].split())  # the hint's own arguments
    assert out.exit_code == 0, out.output
    assert calls == [(EMBEDDING_MODEL.repo, EMBEDDING_MODEL.revision)]
    listed = CliRunner().invoke(models, ["list"])
    assert f"arctic-embed-l-v2.0\t{EMBEDDING_MODEL.repo}@{EMBEDDING_MODEL.revision}\tpresent" in listed.output


def test_models_fetches_the_voyage_tokenizer_and_names_the_revision_it_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    from bench.costs.tokens import DEFAULT_MODEL, load_voyage_tokenizer

    monkeypatch.setenv("BENCH_MODELS_DIR", str(tmp_path))
    got = "d" * 40  # the hub's current commit at download time (the plan pins none)

    def fake_file(repo: str, filename: str, *, cache_dir: Path) -> str:
        assert (repo, filename) == (f"voyageai/{DEFAULT_MODEL}", "tokenizer.json")
        path = snapshot_path(repo, got, Path(cache_dir))
        path.mkdir(parents=True)
        from tests.bench_costs.test_passage_tokens import word_tokenizer

        word_tokenizer(path)
        return str(path / "tokenizer.json")

    assert "voyage-tokenizer\tvoyageai/rerank-3" in CliRunner().invoke(models, ["list"]).output
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_file)
    out = CliRunner().invoke(models, ["fetch", "voyage-tokenizer"])
    assert out.exit_code == 0, out.output
    assert f"voyage-tokenizer\tvoyageai/rerank-3@{got}\t" in out.output
    assert load_voyage_tokenizer(DEFAULT_MODEL).record()["revision"] == got
    assert f"present\t{got}" in CliRunner().invoke(models, ["list"]).output


def test_the_voyage_tokenizer_hint_uses_hf_download(tmp_path: Path) -> None:
    """The pinned huggingface_hub no longer supports `huggingface-cli`; the hint names `hf download`, which
    the locked environment provides."""
    import subprocess
    import sys

    from bench.costs.tokens import load_voyage_tokenizer

    with pytest.raises(BenchError) as err:
        load_voyage_tokenizer("rerank-3", root=tmp_path)
    message = err.value.message
    assert "huggingface-cli" not in message
    assert "`docker compose run --rm bench-cpu models fetch voyage-tokenizer`" in message
    assert f"`hf download voyageai/rerank-3 tokenizer.json --cache-dir {tmp_path}`" in message
    with pytest.raises(BenchError) as other:
        load_voyage_tokenizer("rerank-3-lite", root=tmp_path)
    assert "`hf download voyageai/rerank-3-lite tokenizer.json" in other.value.message
    assert "models fetch voyage-tokenizer" not in other.value.message  # that one fetches rerank-3's only
    hf = Path(sys.executable).parent / "hf"
    help_text = subprocess.run([str(hf), "download", "--help"], capture_output=True, text=True, check=True)
    assert "--cache-dir" in help_text.stdout and "[FILENAMES]" in help_text.stdout
