"""A resumed rehearsal does not start Typesense only to refuse the unsupported stages again:
refusals are recorded in the rehearsal folder and read back; a damaged record names its file."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import bench.firststage.stages as stages_mod
import bench.rehearse.firststages as fs
from bench.core.errors import BenchError
from bench.core.plan import STAGES
from bench.firststage.features import FEATURES, StageRefused
from bench.rehearse.inputs import Inputs


class _Server:
    version, url = "0.24.1", "http://127.0.0.1:1"


def _refuse_all(stage: str, **_: Any) -> Any:
    raise StageRefused(stage, "0.24.1", [FEATURES["stem"]])


def test_resume_reads_recorded_refusals_without_a_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts: list[int | None] = []

    @contextlib.contextmanager
    def fake_server(port: int | None) -> Iterator[_Server]:
        starts.append(port)
        yield _Server()

    monkeypatch.setattr(fs, "server_context", fake_server)
    monkeypatch.setattr(stages_mod, "run_stage", _refuse_all)
    monkeypatch.setattr(fs, "run_probes", lambda server, stage, log: None)  # the fake server answers nothing
    inputs = Inputs("t", {}, [], {})
    logs: list[str] = []

    def run() -> dict[str, dict[str, Any]]:
        return fs.run_first_stages(
            tmp_path, inputs, tmp_path / "q", port=None, embedder_factory=lambda: None, log=logs.append
        )

    first = run()
    assert starts == [None]
    assert [first[s]["status"] for s in STAGES] == ["refused"] * len(STAGES)
    assert all(fs.refusal_path(tmp_path, s).is_file() for s in STAGES)

    again = run()
    assert starts == [None], "the resume started a server only to refuse the same stages"
    for s in STAGES:
        assert again[s] == {**first[s], "resumed": True}
    assert sum("refused before (stem needs Typesense >= 26.0)" in m for m in logs) == len(STAGES)

    fs.refusal_path(tmp_path, "keyword-71k").write_text('{"status": "ran"}')
    with pytest.raises(
        BenchError, match=r"keyword-71k.refused.json: not a valid refusal record.*Delete the file"
    ):
        run()
