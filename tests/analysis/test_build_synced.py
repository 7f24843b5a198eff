"""A report's build folder is on disk before it is swapped in (analysis.core.atomic.built_beside, sync_tree):
every file, written with or without an fsync of its own or rewritten in place (the code record's stamp), and
every folder is fsynced before the exchange, so a power cut after the swap cannot leave a report of empty or
half-written files. Found while timing the report (2026-12-06): the stamp rewrote the JSON files in place
without an fsync, after their atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from analysis.core import atomic


def _record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    return synced


@pytest.mark.parametrize("earlier", [False, True], ids=["first-report", "replacing-a-report"])
def test_every_file_and_folder_is_synced_before_the_swap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, earlier: bool
) -> None:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd to name an fsynced descriptor")
    out = tmp_path / "results"
    if earlier:
        (out / "stage").mkdir(parents=True)
        (out / "study.json").write_text("old\n")
    synced = _record_fsyncs(monkeypatch)
    at_swap: list[set[str]] = []
    for name in ("_rename", "_swap_whole"):
        real = getattr(atomic, name)

        def seen(*args: object, _real=real) -> object:
            at_swap.append(set(synced))
            return _real(*args)

        monkeypatch.setattr(atomic, name, seen)
    with atomic.built_beside(out, ("study.json", "stage", "figure.png")) as build:
        atomic.write_json_atomic(build / "study.json", {"a": 1})
        (build / "study.json").write_bytes(b'{\n "a": 1,\n "analysis_code": {}\n}\n')  # rewritten in place
        (build / "stage").mkdir()
        (build / "stage" / "summary.md").write_text("plain write\n")
        (build / "figure.png").write_bytes(b"\x89PNG")
        wanted = {str(build / p) for p in ("study.json", "stage/summary.md", "figure.png", "stage", ".")}
        wanted = {os.path.normpath(p) for p in wanted}
    assert at_swap, "the swap was not reached"
    missing = wanted - at_swap[0]
    assert not missing, f"not fsynced before the swap: {sorted(missing)}"
    assert (out / "stage" / "summary.md").read_text() == "plain write\n"
    assert (out / "study.json").read_bytes().endswith(b'"analysis_code": {}\n}\n')
