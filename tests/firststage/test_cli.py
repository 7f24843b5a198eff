"""``bench first-stage`` through click's CliRunner."""

from __future__ import annotations

import json
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
    import bench.records.guard
    import bench.records.provenance

    monkeypatch.setattr(bench.records.guard, "preflight", lambda *a, **k: {"kind": "measurement"})
    monkeypatch.setattr("bench.records.codeversion.require_clean_code", lambda *a, **k: {})


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


@pytest.mark.typesense
def test_cli_end_to_end_with_version_pin_lowered(
    server: TypesenseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The whole command path (hub layouts, run file, record with manifest) on 0.24.1, by lowering the
    pinned version for this test only: keyword-plain-71k on a 3-passage corpus in the hub layouts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import bench.core.plan
    import bench.firststage.features as features
    from analysis.inputs.trec import read_run
    from bench.core.plan import CORPUS_71K, MIRACL
    from bench.data.hub import CORPUS_71K_FILE
    from bench.data.miracl import qrels_relpath, topics_relpath

    _no_guard(monkeypatch)
    monkeypatch.setattr(features, "TYPESENSE_VERSION", server.version)
    monkeypatch.setattr(bench.core.plan, "CORPUS_71K_PASSAGES", 3)
    monkeypatch.setenv("BENCH_HUB_DIR", str(tmp_path / "hub"))
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BENCH_TYPESENSE_URL", server.url)
    monkeypatch.setenv("BENCH_TYPESENSE_API_KEY", server.api_key)
    monkeypatch.setenv("BENCH_TYPESENSE_IMAGE", bench.core.plan.TYPESENSE_IMAGE)  # what compose.yaml sets
    server.request("DELETE", "/collections/miracl-de-71k-plain", ok=(200, 404))
    miracl = tmp_path / "hub" / f"{MIRACL.repo}@{MIRACL.revision}"
    (miracl / topics_relpath()).parent.mkdir(parents=True)
    (miracl / qrels_relpath()).parent.mkdir(parents=True)
    (miracl / topics_relpath()).write_text("1#0\tWo liegt Kanada?\n", encoding="utf-8")
    (miracl / qrels_relpath()).write_text("1#0\tQ0\t20#1\t1\n1#0\tQ0\t3#0\t0\n", encoding="utf-8")
    corpus = tmp_path / "hub" / f"{CORPUS_71K.repo}@{CORPUS_71K.revision}" / CORPUS_71K_FILE
    corpus.parent.mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "id": ["20#1", "3#0", "20#0"],  # a later mteb upload's id column (older ones: _id)
                "title": ["Kanada", "Haus", "Kanada"],
                "text": ["Kanada liegt in Nordamerika.", "Ein Haus.", "Kanada ist groß."],
            }
        ),
        corpus,
    )
    res = CliRunner().invoke(
        cli,
        [
            "first-stage",
            "keyword-plain-71k",
            "--runs",
            str(tmp_path / "runs"),
            "--results",
            str(tmp_path / "results"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "Recall@100 1.0000" in res.output
    run = read_run(tmp_path / "runs" / "first-stage" / "keyword-plain-71k.trec")
    assert "20#1" in {d for d, _ in run["1#0"]}
    rec = json.loads((tmp_path / "results" / "first-stage" / "keyword-plain-71k.json").read_text())
    assert rec["mode"] == "measurement" and rec["image"].startswith("typesense/typesense:30.2@sha256:")
    assert rec["image_reported"] == rec["image"]  # null before compose set it
    assert rec["manifest"]["kind"] == "first-stage" and rec["import"]["documents"] == 3
    assert rec["corpus_layout"] == {"corpus_71k_id_column": "id"}


@pytest.mark.typesense
def test_the_probes_refuse_a_server_that_claims_302_before_any_data_is_read(
    server: TypesenseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """0.24.1 behind a stand-in that says 30.2: the version pin passes, the probes refuse, and the
    command stops before it reads the hub files (there are none here) or writes anything."""
    from bench.core.plan import TYPESENSE_VERSION
    from tests.support.typesense_proxy import TypesenseProxy

    _no_guard(monkeypatch)
    with TypesenseProxy(server, version=TYPESENSE_VERSION) as proxy:
        monkeypatch.setenv("BENCH_TYPESENSE_URL", proxy.url)
        monkeypatch.setenv("BENCH_TYPESENSE_API_KEY", server.api_key)
        args = ["first-stage", "keyword-71k", "--runs", str(tmp_path / "r"), "--results", str(tmp_path / "j")]
        res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1, res.output
    out = res.output
    assert f"stage keyword-71k refused by the behavioural probes on Typesense {TYPESENSE_VERSION}" in out
    assert "probe stem (stem): not honoured" in out and "probe locale-de (locale): honoured" in out
    assert not (tmp_path / "r").exists() and not (tmp_path / "j").exists()
