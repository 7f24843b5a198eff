"""Agreement across machines: Spearman per query, >= 0.99 passes, failures named; the scores file's checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.int8.agreement import compare, read_scores, scores_record, summary, write_scores

DOCS = [f"{i}#0" for i in range(10)]
BASE = [float(i) for i in range(10)]


def test_compare_matches_scipy_and_names_failures() -> None:
    from scipy.stats import spearmanr  # heavy: not at collection

    swapped = BASE.copy()
    swapped[0], swapped[9] = swapped[9], swapped[0]  # rho = 1 - 6*2*81/(10*99) = 0.018...
    near = BASE.copy()
    near[4], near[5] = near[5], near[4]  # rho = 1 - 6*2/990 = 0.98788 < 0.99
    theirs = {q: (DOCS, BASE) for q in "abcde"}
    reordered = (list(reversed(DOCS)), list(reversed(BASE)))  # same scores, other candidate order
    mine = {"a": reordered, "b": (DOCS, swapped), "c": (DOCS, near), "e": ([*DOCS[:9], "x#0"], BASE)}
    rows = {r.qid: r for r in compare(mine, theirs)}
    assert rows["a"].passed and rows["a"].spearman == pytest.approx(1.0)
    assert rows["b"].spearman == pytest.approx(spearmanr(BASE, swapped).statistic, abs=1e-12)
    assert rows["c"].spearman == pytest.approx(spearmanr(BASE, near).statistic, abs=1e-12)
    assert not rows["c"].passed and rows["c"].spearman > 0.98  # just below the plan's 0.99 fails
    assert (
        rows["d"].reason == "query missing on this machine" and rows["e"].reason == "candidate lists differ"
    )
    s = summary(list(rows.values()))
    assert s["failed"] == ["b", "c", "d", "e"] and s["passed"] == 1


def test_scores_file_round_trip_and_bad_files(tmp_path: Path) -> None:
    rec = scores_record(
        {"a": (DOCS, BASE)}, model="m", machine={"vnni": False}, manifest_sha256=None, inputs={}
    )
    path = tmp_path / "s.json"
    write_scores(path, rec)
    assert read_scores(path) == {"a": (DOCS, BASE)}
    with pytest.raises(BenchError, match="scores file missing"):
        read_scores(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**rec, "queries": {"a": {"docids": DOCS, "scores": BASE[:3]}}}))
    with pytest.raises(BenchError, match="query a: 'docids' and 'scores' must be lists of equal length"):
        read_scores(bad)
    bad.write_text("{not json")
    with pytest.raises(BenchError, match="not valid JSON"):
        read_scores(bad)


def test_cli_refuses_a_bad_against_file_before_scoring(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from bench.cli import cli

    bad = tmp_path / "theirs.json"
    bad.write_text(json.dumps({"format": "other"}))
    result = CliRunner().invoke(cli, ["int8", "agreement", "--against", str(bad)])
    assert result.exit_code == 1
    assert "not an int8 scores file" in result.output


# --- configuration and precision of both files; the shared --id-map; the verdict ---

CONF = {
    "quantization": {"name": "overflow-fix"},
    "inference_precision": "f32",
    "runtime_inference_precision": "f32",
}
XEON = {
    "cpu_model": "Xeon",
    "flags": {"avx512_vnni": True, "amx_int8": True, "avx2": True},
    "vnni": True,
    "bf16": True,
}
EPYC = {
    "cpu_model": "EPYC",
    "flags": {"avx512_vnni": False, "amx_int8": False, "avx2": True},
    "vnni": False,
    "bf16": False,
}


def test_scores_made_with_another_precision_or_configuration_are_refused_naming_both() -> None:
    from bench.int8.agreement import require_same_configuration

    require_same_configuration(CONF, "mine", dict(CONF), "theirs.json")  # same: no error
    with pytest.raises(BenchError, match=r"inference_precision.*mine: .*'f32'.*theirs\.json: .*'bf16'"):
        require_same_configuration(CONF, "mine", {**CONF, "inference_precision": "bf16"}, "theirs.json")
    other = {**CONF, "quantization": {"name": "default"}}
    expect = r"quantization differ.*'overflow-fix'.*theirs\.json: configuration 'default'"
    with pytest.raises(BenchError, match=expect):
        require_same_configuration(CONF, "mine", other, "theirs.json")
    expect = r"theirs\.json: records no quantisation configuration.*--write FILE"
    with pytest.raises(BenchError, match=expect):
        require_same_configuration(CONF, "mine", None, "theirs.json")


def _folder(tmp_path: Path) -> Path:
    from bench.rerankers.openvino import manifest as man
    from bench.rerankers.openvino.config import CHOSEN

    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "model.xml").write_bytes(b"<xml/>")
    man.write_manifest(
        folder, task="text-classification", spec=CHOSEN, max_length=512, calibration_samples=3, record={}
    )
    return folder


def _fake_scoring(monkeypatch: pytest.MonkeyPatch, scores: list[float], machine: dict[str, object]) -> dict:
    """Stand-ins for the datasets.lock check and the model (neither is what these tests are about); records
    what the command asked them for."""
    import bench.int8.commands as cmd
    import bench.records.guard
    from bench.rerankers.openvino.config import CHOSEN

    seen: dict[str, object] = {}

    def preflight(kind: str, *, lock_names: list[str], root: Path) -> dict[str, object]:
        seen["lock_names"] = list(lock_names)
        return {}

    def machine_scores(folder: Path, *, id_map_method: str = "de.gz", stream: object = None) -> dict:
        seen["id_map_method"] = id_map_method
        conf = {**CONF, "quantization": CHOSEN.to_dict()}
        return scores_record(
            {"a": (DOCS, scores)},
            model="bge-v2-m3-int8",
            machine=machine,
            manifest_sha256="abc",
            inputs={"id_map_method": id_map_method},
            config=conf,
            runtime={"inference_precision": "f32"},
        )

    monkeypatch.setattr(bench.records.guard, "preflight", preflight)
    monkeypatch.setattr(cmd, "machine_scores", machine_scores)
    return seen


@pytest.mark.parametrize("method", ["corpus", "de.gz"])
def test_agreement_takes_the_check_adapters_id_map_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """D-019: without de.gz the equality set's ids come from one pass over the full corpus, as in
    check-adapters; the lock names and the loader follow the same method."""
    from click.testing import CliRunner

    from bench.cli import cli
    from bench.equality.runner import id_map_lock_names

    seen = _fake_scoring(monkeypatch, BASE, EPYC)
    out = tmp_path / "mine.json"
    res = CliRunner().invoke(
        cli, ["int8", "agreement", "--write", str(out), "--int8-dir", str(tmp_path), "--id-map", method]
    )
    assert res.exit_code == 0, res.output
    assert seen == {"lock_names": id_map_lock_names(method), "id_map_method": method}
    assert seen["lock_names"] == (
        ["reranking", "corpus-full"] if method == "corpus" else ["reranking", "reranking-id-map"]
    )
    assert json.loads(out.read_text())["inputs"]["id_map_method"] == method


def test_agreement_verdict_with_both_machines_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from bench.cli import cli
    from bench.rerankers.openvino.config import CHOSEN

    folder = _folder(tmp_path)
    theirs = tmp_path / "desktop.json"
    conf = {**CONF, "quantization": CHOSEN.to_dict()}
    write_scores(
        theirs,
        scores_record(
            {"a": (DOCS, BASE)},
            model="bge-v2-m3-int8",
            machine=EPYC,
            manifest_sha256="abc",
            inputs={},
            config=conf,
        ),
    )
    _fake_scoring(monkeypatch, BASE, XEON)
    verdict = tmp_path / "v" / "agreement.json"
    args = ["int8", "agreement", "--against", str(theirs), "--int8-dir", str(folder)]
    args += ["--verdict", str(verdict)]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "verdict: PASSED" in res.output
    assert "CPU here: Xeon: avx512_vnni amx_int8 avx2 (VNNI True, bf16 True)" in res.output
    assert f"CPU of {theirs}: EPYC: avx2 (VNNI False, bf16 False)" in res.output
    got = json.loads(verdict.read_text())
    assert got["passed"] is True and got["format"] == "int8-agreement/1"
    assert got["machines"]["against"] == EPYC
    # a failing comparison writes its verdict too, and exits 1 naming the query and both CPUs
    swapped = BASE.copy()
    swapped[0], swapped[9] = swapped[9], swapped[0]
    _fake_scoring(monkeypatch, swapped, XEON)
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1 and "a (Spearman 0.0182 < 0.99)" in res.output
    assert "CPU here: Xeon" in res.output and "EPYC: avx2" in res.output
    got = json.loads(verdict.read_text())
    assert got["passed"] is False and got["failed"] == ["a"]
    # another precision in the other machine's file: refused before anything is scored
    write_scores(
        theirs,
        scores_record(
            {"a": (DOCS, BASE)},
            model="bge-v2-m3-int8",
            machine=EPYC,
            manifest_sha256="abc",
            inputs={},
            config={**conf, "inference_precision": "bf16"},
        ),
    )
    seen = _fake_scoring(monkeypatch, BASE, XEON)
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1 and "not compared" in res.output and "'bf16'" in res.output
    assert str(theirs) in res.output and str(folder) in res.output and seen == {}
