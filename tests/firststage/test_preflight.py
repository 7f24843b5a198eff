"""The keyword-full preflight: the fits, the prediction against the machine, the refusal and the dry run."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.core.errors import BenchError
from bench.core.plan import CORPUS_FULL_PASSAGES
from bench.data.bundled import Sample
from bench.firststage import preflight as pf
from bench.integrity import datalock

NS = [100_000.0, 300_000.0, 1_000_000.0]


@pytest.fixture(scope="module", autouse=True)
def sample_read_once(sample: Sample) -> Iterator[None]:
    """Every prediction reads the bundled sample and gzips it (twice) for its byte figures; the module's
    tests share one reading and one set of figures (the real ones: the sample is fixed, locked data)."""
    mp, real = pytest.MonkeyPatch(), pf.load_sample
    mp.setattr(pf, "load_sample", lambda root=None: sample if root is None else real(root))
    mp.setattr(pf, "_sample_bytes", functools.cache(pf._sample_bytes))
    mp.setattr(pf, "_sample_sorted_ratio", functools.cache(pf._sample_sorted_ratio))
    yield
    mp.undo()


def test_power_law_and_affine_fits_recover_their_parameters() -> None:
    p = pf.fit_power_law(NS, [3.0 * n**0.8 for n in NS])
    assert p["a"] == pytest.approx(3.0, rel=1e-9) and p["b"] == pytest.approx(0.8, rel=1e-9)
    assert p["max_rel_residual"] < 1e-9
    a = pf.fit_affine(NS, [5e7 + 2000.0 * n for n in NS])
    assert a["c"] == pytest.approx(5e7, rel=1e-9) and a["k"] == pytest.approx(2000.0, rel=1e-9)
    # a curved series: the power law misses it, and says so in its residual
    curved = pf.fit_power_law(NS, [1e7 + 100.0 * n for n in NS])
    assert curved["max_rel_residual"] > 0.01
    with pytest.raises(BenchError, match="at least two"):
        pf.fit_power_law([1.0], [2.0])
    with pytest.raises(BenchError, match="positive"):
        pf.fit_power_law([1.0, 2.0], [0.0, 1.0])


def test_predict_takes_the_larger_model_and_scales_by_bytes() -> None:
    fig = pf.fit_figure(NS, [1e8 + 2000.0 * n for n in NS])
    models = pf.predict_models(fig, CORPUS_FULL_PASSAGES)
    assert models["affine"] == pytest.approx(1e8 + 2000.0 * CORPUS_FULL_PASSAGES, rel=1e-9)
    assert models["power_law"] < models["affine"]  # the power law bends below a line with an intercept
    assert pf.predict(fig, CORPUS_FULL_PASSAGES, 1.5) == pytest.approx(1.5 * models["affine"], rel=1e-12)


def _fit_file(path: Path, per_passage: float = 3000.0) -> Path:
    figures = {f: pf.fit_figure(NS, [1e7 + per_passage * n for n in NS]) for f in pf.FIGURES}
    pf.write_fit(
        figures,
        sizes=[int(n) for n in NS],
        generated_mean_passage_bytes=600.0,
        provenance={"test": True},
        path=path,
    )
    return path


def test_prediction_without_lock_uses_the_plan_and_the_sample(tmp_path: Path) -> None:
    fit = _fit_file(tmp_path / "fit.json")
    p = pf.keyword_full_prediction(fit_path=fit, lock_path=tmp_path / "no.lock", data_dir=tmp_path)
    assert p.passages == CORPUS_FULL_PASSAGES and "plan's row count" in p.passages_source
    mean, _ = pf._sample_bytes()
    assert p.bytes_per_passage == pytest.approx(mean) and "assumed" in p.bytes_source
    assert p.bytes_scale == pytest.approx(mean / 600.0)
    assert p.memory_bytes == pytest.approx((1e7 + 3000.0 * CORPUS_FULL_PASSAGES) * mean / 600.0, rel=1e-9)
    assert p.available_memory_bytes is not None and p.free_disk_bytes is not None
    assert "15,866,222" in p.text() and "fitted on N = 100,000, 300,000, 1,000,000" in p.text()


def test_prediction_from_the_lock(tmp_path: Path) -> None:
    lock = tmp_path / "datasets.lock"
    src = datalock.Source(
        "miracl/miracl-corpus", "r" * 40, "miracl-corpus-v1.0-de/docs-0.jsonl.gz", "huggingface-dataset"
    )
    e = datalock.Entry("corpus-full", "hub", "x/docs-0.jsonl.gz", src, 30_000_000, "0" * 64, 100_000, "r")
    datalock.write_lock(lock, {"hub:x:docs-0": e})
    p = pf.keyword_full_prediction(
        fit_path=_fit_file(tmp_path / "fit.json"), lock_path=lock, data_dir=tmp_path
    )
    mean, gz = pf._sample_bytes()
    assert p.passages == 100_000 and "rows of the corpus-full shards" in p.passages_source
    assert p.bytes_per_passage == pytest.approx(300.0 * mean / gz) and "1 locked shards" in p.bytes_source


def test_refusal_names_need_have_and_how(tmp_path: Path) -> None:
    p = pf.keyword_full_prediction(
        fit_path=_fit_file(tmp_path / "fit.json"), lock_path=tmp_path / "n", data_dir=tmp_path
    )
    small = replace(p, available_memory_bytes=2**30, free_disk_bytes=2**30)
    with pytest.raises(BenchError) as err:
        pf.check(small, ignore=False)
    msg = err.value.message
    assert "refused before sending anything" in msg and "this machine has 1.0 GiB available" in msg
    assert f"needs {small.memory_bytes / 2**30:.1f} GiB" in msg and "disk: needs" in msg
    assert "how:" in msg and "--ignore-preflight" in msg
    rec = pf.check(small, ignore=True)
    assert rec["ignored"] is True and len(rec["problems"]) == 2
    big = replace(p, available_memory_bytes=10**15, free_disk_bytes=10**15)
    assert pf.check(big, ignore=False)["problems"] == []


def test_fit_file_errors(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="fit is missing"):
        pf.read_fit(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": pf.FIT_FORMAT, "figures": {}}))
    with pytest.raises(BenchError, match="missing"):
        pf.read_fit(bad)


def test_committed_fit_and_dry_run_offline() -> None:
    from bench.firststage.cli import first_stage

    fit = pf.read_fit()  # the committed fit, measured by benchmarks/bench_scale_keyword.py
    assert fit["provenance"]["script"] == "benchmarks/bench_scale_keyword.py"
    rows = fit["provenance"]["rows"]
    assert [r["n"] for r in rows] == fit["sizes"] and len(rows) >= 2
    for r in rows:  # every figure carries its load average (a loaded machine)
        assert len(r["load_before"]) == 3 and len(r["load_after_import"]) == 3
    for name, f in fit["figures"].items():
        assert math.isfinite(f["power_law"]["b"]) and math.isfinite(f["affine"]["k"]), name
    result = CliRunner().invoke(first_stage, ["keyword-full", "--dry-run"])
    assert result.exit_code in (0, 1), result.output
    assert "preflight keyword-full: 15,866,222 passages" in result.output
    assert "predicted server memory" in result.output and "how:" in result.output
    other = CliRunner().invoke(first_stage, ["keyword-71k", "--dry-run"])
    assert other.exit_code != 0 and "keyword-full only" in other.output


Shards = tuple[dict[str, datalock.Entry], list[Path]]


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Shards:
    """The bundled sample written as three shards in the MIRACL format (gzip level 6), out of order (its
    thirds in the order 3, 1, 2, and two neighbours swapped), with their lock entries (real sizes): written
    once for the module's tests, which only read them."""
    import gzip

    from bench.integrity.hashing import sha256_file

    corpus = pf.load_sample().corpus  # the module's one reading (sample_read_once)
    third = len(corpus) // 3
    idx = list(range(len(corpus)))
    idx[10], idx[11] = idx[11], idx[10]
    parts = [idx[2 * third :], idx[:third], idx[third : 2 * third]]
    folder = tmp_path_factory.mktemp("shards")
    entries, paths = {}, []
    for k, part in enumerate(parts):
        path = folder / f"docs-{k}.jsonl.gz"
        with gzip.open(path, "wb", compresslevel=pf.GZIP_LEVEL) as fh:
            for i in part:
                p = corpus[int(i)]
                fh.write(
                    (
                        json.dumps({"docid": p.docid, "title": p.title, "text": p.text}, ensure_ascii=False)
                        + "\n"
                    ).encode()
                )
        src = datalock.Source(
            "miracl/miracl-corpus",
            "r" * 40,
            f"miracl-corpus-v1.0-de/docs-{k}.jsonl.gz",
            "huggingface-dataset",
        )
        entries[f"hub:x:docs-{k}"] = datalock.Entry(
            "corpus-full",
            "hub",
            f"x/docs-{k}.jsonl.gz",
            src,
            path.stat().st_size,
            sha256_file(path),
            len(part),
            "r",
        )
        paths.append(path)
    return entries, paths


def _out_of_order_lock(tmp_path: Path, ascending: bool | None, shards: Shards) -> tuple[Path, list[Path]]:
    """The lock of the module's out-of-order ``shards``; ``ascending`` is its import-order note (None: no
    note)."""
    entries, paths = shards
    lock = tmp_path / "datasets.lock"
    notes = (
        {} if ascending is None else {"corpus-full": {"import_order": {"ascending": ascending, "note": "x"}}}
    )
    datalock.write_lock(lock, entries, notes)
    return lock, paths


def _measured_sort(
    paths: list[Path], out: Path, monkeypatch: pytest.MonkeyPatch, inputs: dict[str, str]
) -> tuple[int, int]:
    """(bytes of the merged import order, bytes of all runs plus the merged file at the end of the merge):
    what ``external_sort`` really writes, the runs measured just before it deletes them. ``inputs``: the
    shards' hashes it records (a later prediction reuses the sort)."""
    from bench.data.hub import iter_jsonl_gz
    from bench.data.order import SORTED_FILE, external_sort

    runs: list[int] = []
    real_unlink = Path.unlink

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if self.name.startswith("run-"):
            runs.append(self.stat().st_size)
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    external_sort((p for s in paths for p in iter_jsonl_gz(s)), out, run_size=2000, inputs=inputs)
    monkeypatch.undo()
    merged = (out / SORTED_FILE).stat().st_size
    assert len(runs) == 4  # 7,402 passages in runs of 2,000
    return merged, merged + sum(runs)


def test_disk_check_adds_the_external_sort_when_the_lock_says_out_of_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shards: Shards
) -> None:
    lock, paths = _out_of_order_lock(tmp_path, ascending=False, shards=shards)
    fit = _fit_file(tmp_path / "fit.json")
    sort_dir = tmp_path / "sorted"
    p = pf.keyword_full_prediction(fit_path=fit, lock_path=lock, data_dir=tmp_path, sort_dir=sort_dir)
    s = p.sort
    assert s is not None and s.counted and "not ascending" in s.order
    # the reference: what the external sort of these very shards writes (runs + merged import order), made
    # where the prediction looks for a sort, with the shards' hashes (the reuse below)
    inputs = {e.source.path: e.sha256 for e in datalock.read_lock(lock).values()}
    merged, peak = _measured_sort(paths, sort_dir, monkeypatch, inputs)
    assert s.sorted_copy_bytes == pytest.approx(merged, rel=0.03)
    assert s.peak_bytes == pytest.approx(peak, rel=0.03)
    # one file system: the data directory grows while the sorted copy stays
    [(folder, need, _free, what)] = p.disk_needs()
    assert folder == str(tmp_path) and need == pytest.approx(
        max(s.peak_bytes, s.sorted_copy_bytes + p.disk_bytes)
    )
    assert need > p.disk_bytes and "sorted copy" in what
    # free space that holds the data directory but not the sorted copy as well: refused, naming the sort
    tight = replace(
        p, available_memory_bytes=10**15, free_disk_bytes=int(p.disk_bytes + s.sorted_copy_bytes / 2)
    )
    [problem] = tight.problems
    assert "sorted copy" in problem and f"needs {need / 2**30:.1f} GiB" in problem
    assert "added to the disk check" in p.text() and "sorted runs + merged import order" in p.text()
    # a sort already made for exactly these shards (the measured one, in sort_dir) is reused: nothing added
    again = pf.keyword_full_prediction(fit_path=fit, lock_path=lock, data_dir=tmp_path, sort_dir=sort_dir)
    assert again.sort is not None and not again.sort.counted and "reused" in again.sort.order
    assert [n for _, n, _, _ in again.disk_needs()] == [again.disk_bytes]


@pytest.mark.parametrize("ascending", [True, None])
def test_no_sort_added_when_in_order_or_unchecked(
    tmp_path: Path, ascending: bool | None, shards: Shards
) -> None:
    lock, _ = _out_of_order_lock(tmp_path, ascending=ascending, shards=shards)
    p = pf.keyword_full_prediction(
        fit_path=_fit_file(tmp_path / "fit.json"), lock_path=lock, data_dir=tmp_path, sort_dir=tmp_path / "s"
    )
    assert p.sort is not None and not p.sort.counted
    assert [n for _, n, _, _ in p.disk_needs()] == [p.disk_bytes]
    assert ("ascending at lock time" if ascending else "not checked at lock time") in p.sort.order


def test_dry_run_prints_the_sort(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shards: Shards) -> None:
    from bench.firststage import cli

    lock, _ = _out_of_order_lock(tmp_path, ascending=False, shards=shards)
    fit = _fit_file(tmp_path / "fit.json", per_passage=1.0)  # a tiny server: only the disk can refuse
    real = pf.keyword_full_prediction

    def patched(**kw: object) -> pf.Prediction:
        return real(fit_path=fit, lock_path=lock, data_dir=tmp_path, sort_dir=tmp_path / "sorted")

    monkeypatch.setattr(pf, "keyword_full_prediction", patched)
    result = CliRunner().invoke(cli.first_stage, ["keyword-full", "--dry-run"])
    assert "import order: not ascending at lock time" in result.output
    assert "sorted runs + merged import order" in result.output and "disk needed at" in result.output
    assert result.exit_code in (0, 1), result.output
