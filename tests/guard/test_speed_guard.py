"""``benchmarks/guard.py``: the speed guard's verdicts and exit codes on planted figures,
its recorded-figures file, and one real planted slowdown through the whole command (the self-check figure).
Nothing here asserts a time: the tests check the comparison and the plumbing (speed is checked by the
benchmark scripts themselves)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripts import ROOT, benchmark

gc = benchmark("guard_compare")  # first: guard.py imports it by this name
guard = benchmark("guard")
lock = benchmark("bench_lock_verify")

SCRIPT = ROOT / "benchmarks" / "guard.py"
EPYC: dict[str, Any] = {
    "cpu_model": "AMD EPYC",
    "flags": {"avx2": True},
    "flags_sha256": "f" * 64,
    "cpus": 2,
    "load_start": [0.4, 0.5, 0.6],
    "load_end": [1.0, 0.7, 0.6],
}
LOADED = {**EPYC, "load_start": [23.0, 22.0, 20.0]}
XEON = {**EPYC, "cpu_model": "Intel Xeon", "flags": {"avx2": True, "avx512f": True}}


def record(machine: dict[str, Any], **figures: tuple[float, float | None]) -> dict[str, Any]:
    figs = [gc.Figure(name, value, anchor) for name, (value, anchor) in figures.items()]
    return gc.new_record(figs, machine, {"date": "2026-12-02T00:00:00Z", "commit": "abc", "dirty": False})


def test_a_planted_slower_ratio_fails_and_one_within_the_margin_passes() -> None:
    rec = record(LOADED, report=(8.0, 2.0))  # ratio 4.0
    slower, code = gc.compare([gc.Figure("report", 6.4, 1.0)], rec, LOADED)  # ratio 6.4: 1.6x
    assert (slower[0].verdict, code) == (gc.SLOWER, gc.EXIT_SLOWER)
    assert slower[0].change == pytest.approx(1.6)
    same, code = gc.compare([gc.Figure("report", 5.6, 1.0)], rec, LOADED)  # 1.4x: inside the loaded 50 %
    assert (same[0].verdict, code) == (gc.OK, gc.EXIT_OK)
    faster, code = gc.compare([gc.Figure("report", 2.0, 1.0)], rec, LOADED)
    assert (faster[0].verdict, code) == (gc.FASTER, gc.EXIT_OK)


def test_the_margin_is_25_percent_of_the_ratio_when_idle_and_50_when_loaded() -> None:
    idle, loaded = record(EPYC, report=(4.0, 1.0)), record(LOADED, report=(4.0, 1.0))
    other_idle = {**EPYC, "cpu_model": "Intel Xeon"}  # other CPU: ratios only, the idle margin
    for rec, here, margin in (
        (idle, other_idle, 1.25),
        (loaded, LOADED, 1.5),
        (idle, LOADED, 1.5),
        (loaded, other_idle, 1.5),
    ):
        assert gc.compare([gc.Figure("report", 4.0 * margin, 1.0)], rec, here)[1] == gc.EXIT_OK
        assert gc.compare([gc.Figure("report", 4.0 * margin + 0.01, 1.0)], rec, here)[1] == gc.EXIT_SLOWER


def test_a_load_that_slows_figure_and_anchor_alike_is_not_a_slowdown() -> None:
    rec = record(EPYC, report=(2.0, 1.0))
    rows, code = gc.compare([gc.Figure("report", 8.0, 4.0)], rec, LOADED)  # 4x slower, anchor too
    assert code == gc.EXIT_OK and rows[0].absolute_change is None


def test_absolute_times_count_only_on_the_same_cpu_with_both_runs_idle() -> None:
    rec = record(EPYC, report=(2.0, 1.0))
    now = [gc.Figure("report", 3.0, 1.5)]  # same ratio, 1.5x the absolute time
    rows, code = gc.compare(now, rec, EPYC)
    assert code == gc.EXIT_SLOWER and rows[0].absolute_change == pytest.approx(1.5)
    assert gc.compare(now, rec, LOADED)[1] == gc.EXIT_OK
    assert gc.compare(now, record(LOADED, report=(2.0, 1.0)), EPYC)[1] == gc.EXIT_OK


def test_a_figure_without_an_anchor_is_judged_only_when_absolute_times_count() -> None:
    rec = record(EPYC, plain=(2.0, None))
    rows, code = gc.compare([gc.Figure("plain", 2.1)], rec, LOADED)
    assert (rows[0].verdict, code) == (gc.UNKNOWN, gc.EXIT_UNKNOWN)
    assert gc.compare([gc.Figure("plain", 2.1)], rec, EPYC)[1] == gc.EXIT_OK
    assert gc.compare([gc.Figure("plain", 2.6)], rec, EPYC)[1] == gc.EXIT_SLOWER


def test_no_record_for_this_cpu_cannot_tell() -> None:
    data, _ = gc.merge({"records": []}, record(EPYC, report=(2.0, 1.0)), force=False)
    assert gc.find_record(data["records"], XEON) is None
    assert gc.find_record(data["records"], {**EPYC, "flags_sha256": "0" * 64}) is None
    assert gc.find_record(data["records"], LOADED) is not None  # the load is not part of the CPU
    rows, code = gc.compare([gc.Figure("report", 1.0, 1.0)], None, XEON)
    assert code == gc.EXIT_UNKNOWN and rows[0].note == "no record for this CPU"


def test_not_measured_or_not_recorded_cannot_tell_but_a_slowdown_still_fails() -> None:
    rec = record(LOADED, report=(4.0, 1.0))
    unknown = [gc.Figure("report", None, reason="openssl not found"), gc.Figure("lock", 1.0, 1.0)]
    rows, code = gc.compare(unknown, rec, LOADED)
    assert code == gc.EXIT_UNKNOWN and rows[0].note == "not measured: openssl not found"
    assert rows[1].note == "no recorded figure"
    rows, code = gc.compare([*unknown, gc.Figure("report", 9.0, 1.0)], rec, LOADED)
    assert code == gc.EXIT_SLOWER


def test_recording_replaces_only_this_cpus_figures_and_says_what_changed() -> None:
    data, _ = gc.merge({"records": []}, record(XEON, report=(1.0, 1.0)), force=False)
    data, changes = gc.merge(data, record(LOADED, report=(3.0, 1.0)), force=False)
    data, changes = gc.merge(data, record(LOADED, report=(6.0, 1.0), lock=(1.0, 1.0)), force=False)
    assert [r["machine"]["cpu_model"] for r in data["records"]] == ["Intel Xeon", "AMD EPYC"]
    assert gc.find_record(data["records"], EPYC)["figures"]["report"]["ratio"] == 6.0
    assert changes[0].startswith("record for AMD EPYC (loaded, load 23.00): replaces the one of 2026-12-02")
    assert changes[1:] == ["  report: ratio 3 -> 6", "  lock: ratio - -> 1"]


def test_loaded_figures_do_not_replace_idle_ones_unless_forced() -> None:
    data, _ = gc.merge({"records": []}, record(EPYC, report=(2.0, 1.0)), force=False)
    with pytest.raises(ValueError, match="idle ones and this run was loaded"):
        gc.merge(data, record(LOADED, report=(2.0, 1.0)), force=False)
    assert gc.merge(data, record(LOADED, report=(2.0, 1.0)), force=True)[0]["records"][0]["loaded"]


def test_a_figure_not_measured_is_never_recorded() -> None:
    with pytest.raises(ValueError, match=r"report \(Typesense failed\)"):
        gc.new_record([gc.Figure("report", None, reason="Typesense failed")], EPYC, {})


def test_plant_specs() -> None:
    assert guard.plants("report:2.0, status:1.5") == {"report": 2.0, "status": 1.5}
    assert guard.plants(None) == {}
    for bad in ("report", "report:x", "report:0"):
        with pytest.raises(ValueError, match="NAME:FACTOR"):
            guard.plants(bad)


def test_subprocesses_run_with_bytecode_on() -> None:
    env = guard.clean_env()
    assert not {"PYTHONDONTWRITEBYTECODE", "ANALYSIS_WORKERS", "ANALYSIS_TREC_READER"} & set(env)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is the lock figure's anchor")
def test_the_lock_figure_and_its_anchor_hash_the_same_file(tmp_path: Path) -> None:
    size, rows = lock.measure(2, 1, str(tmp_path))
    assert size == 2 * 2**20
    assert [r[0] for r in rows] == ["bench sha256_file", "openssl dgst -sha256"]
    assert rows[0][2] == rows[1][2] and len(rows[0][2]) == 64


def _guard(tmp: Path, *args: str, plant: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BENCH_GUARD_PLANT"}
    if plant:
        env["BENCH_GUARD_PLANT"] = plant
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--only", "plumbing", "--recorded", str(tmp), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


def test_a_real_planted_slowdown_fails_the_command(tmp_path: Path) -> None:
    rec = tmp_path / "recorded.json"
    made = _guard(rec, "--record")
    assert made.returncode == 0, made.stdout + made.stderr
    assert "recorded in" in made.stdout and "plumbing: ratio - ->" in made.stdout
    before = rec.read_bytes()
    slow = _guard(rec, plant="plumbing:6")
    assert slow.returncode == gc.EXIT_SLOWER, slow.stdout + slow.stderr
    assert "SLOWER" in slow.stdout and "PLANTED slowdown: {'plumbing': 6.0}" in slow.stdout
    refused = _guard(rec, "--record", plant="plumbing:6")
    assert refused.returncode == 2 and "nothing recorded" in refused.stderr
    assert rec.read_bytes() == before


def test_another_cpus_record_cannot_tell_and_a_broken_file_is_named(tmp_path: Path) -> None:
    rec = tmp_path / "recorded.json"
    other = gc.merge({"records": []}, record(XEON, plumbing=(1.0, 1.0)), force=False)[0]
    rec.write_text(json.dumps(other))
    out = _guard(rec)
    assert out.returncode == gc.EXIT_UNKNOWN and "no record for this CPU" in out.stdout
    rec.write_text('{"records": [{"figures": {}}]}')
    broken = _guard(rec, "--record")
    assert broken.returncode != 0 and broken.returncode != gc.EXIT_UNKNOWN
    assert broken.stderr.strip().splitlines() == [
        f"{rec}: not a recorded-figures file (a record without 'machine' or 'figures'); restore it with "
        "`git checkout recorded.json` or delete it and run with --record"
    ]
    assert rec.read_text() == '{"records": [{"figures": {}}]}'


def test_the_docs_table_is_made_from_the_recorded_figures() -> None:
    rec = record(LOADED, report=(67.5, 17.2))
    rec["figures"]["report"]["what"] = "cold `analysis report`"
    lines = gc.markdown([rec]).splitlines()
    assert lines[2] == (
        "| `report` | cold `analysis report` | 67.50 s | 17.20 s | 3.92 | "
        "AMD EPYC x 2 (avx2) | 23.00 (loaded) | 2026-12-02 00:00 UTC, abc |"
    )
    # two CPUs of one model name (the AVX2-only EPYC and a Zen 4 one) are told apart by their top flags
    zen4 = {**EPYC, "flags": {"avx2": True, "avx512f": True, "avx512_vnni": True}}
    other = gc.markdown([{**rec, "machine": {**rec["machine"], **zen4}}]).splitlines()[2]
    assert "| AMD EPYC x 2 (avx512_vnni, avx512f) |" in other


def test_sigterm_cleans_up_and_records_nothing(tmp_path: Path) -> None:
    rec = tmp_path / "recorded.json"
    env = {k: v for k, v in os.environ.items() if k != "BENCH_GUARD_PLANT"} | {"TMPDIR": str(tmp_path)}
    cmd = [sys.executable, str(SCRIPT), "--only", "report-json", "--recorded", str(rec), "--record"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    waited = 0.0
    while not any(tmp_path.glob("guard-report-*/runs/*")) and waited < 120:  # the study is being written
        time.sleep(0.2)
        waited += 0.2
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "guard interrupted: nothing judged, nothing recorded" in err
    assert not rec.exists() and not list(tmp_path.glob("guard-report-*"))
