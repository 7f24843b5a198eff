"""``bench first-stage`` through click's CliRunner."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.cli import cli
from bench.firststage.server import TypesenseServer, free_port


def test_help_lists_the_plan_stages() -> None:
    res = CliRunner().invoke(cli, ["first-stage", "--help"])
    assert res.exit_code == 0
    for stage in ("keyword-71k", "vector-71k", "hybrid-71k", "keyword-full", "keyword-plain-71k"):
        assert stage in "".join(res.output.split())  # click wraps the choice list


def test_unknown_stage() -> None:
    res = CliRunner().invoke(cli, ["first-stage", "bm25"])
    assert res.exit_code != 0 and "Invalid value" in res.output


def _no_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.guard
    import bench.provenance

    monkeypatch.setattr(bench.guard, "preflight", lambda *a, **k: {"kind": "measurement"})
    monkeypatch.setattr(bench.provenance, "require_clean_tree", lambda *a, **k: None)


@pytest.mark.typesense
def test_measurement_refuses_0241(
    server: TypesenseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_guard(monkeypatch)
    monkeypatch.setenv("BENCH_TYPESENSE_URL", server.url)
    monkeypatch.setenv("BENCH_TYPESENSE_API_KEY", server.api_key)
    res = CliRunner().invoke(
        cli,
        ["first-stage", "keyword-plain-71k", "--runs", str(tmp_path / "r"), "--results", str(tmp_path / "j")],
    )
    assert res.exit_code == 1 and "measurement refused" in res.output and "0.24.1" in res.output
    assert not (tmp_path / "r").exists() and not (tmp_path / "j").exists()


@pytest.mark.typesense
def test_wrong_key_and_unreachable(server: TypesenseServer, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_guard(monkeypatch)
    monkeypatch.setenv("BENCH_TYPESENSE_URL", server.url)
    monkeypatch.setenv("BENCH_TYPESENSE_API_KEY", "not-the-key")
    res = CliRunner().invoke(cli, ["first-stage", "keyword-71k"])
    assert res.exit_code == 1 and "rejected the API key" in res.output
    monkeypatch.setenv("BENCH_TYPESENSE_URL", f"http://127.0.0.1:{free_port()}")
    res = CliRunner().invoke(cli, ["first-stage", "keyword-71k"])
    assert res.exit_code == 1 and "unreachable" in res.output


def test_missing_server_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_guard(monkeypatch)
    monkeypatch.delenv("BENCH_TYPESENSE_URL", raising=False)
    res = CliRunner().invoke(cli, ["first-stage", "keyword-71k"])
    assert res.exit_code == 1 and "BENCH_TYPESENSE_URL" in res.output
