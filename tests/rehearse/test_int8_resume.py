"""A resumed rehearsal keeps a finished int8 step: ``int8.json`` names what it was computed
from (``computed_from``); ``run_int8_step`` with the same inputs returns it without loading or timing the int8
stand-in, and with any input changed (the first-stage run, the fp32 quality run, a candidate's text, the
latency step's fp32 times, the quantised model, a missing int8 latency block, a record older than the check)
it times again and replaces the record. The int8 model is a fake here: what is checked is the reuse
decision; the real resume is tests/rehearse/test_end_to_end.py's no-op resume."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from analysis.inputs.trec import read_run, write_run
from bench.rehearse import int8 as step
from bench.rerankers.openvino.config import INFERENCE_PRECISION
from bench.rerankers.openvino.manifest import MANIFEST
from tests.support.fakes import FakeReranker

RUNTIME = {"inference_precision": INFERENCE_PRECISION, "int8_isa": "avx2", "cpu": {"vnni": False}}


class FakeInt8(FakeReranker):
    """The int8 stand-in's place: scores like the fp32 run, with the runtime facts int8.json records."""

    def __init__(self) -> None:
        super().__init__("minilm-standin-int8", score="passage_number")
        self._meta = replace(self._meta, dtype="int8", extra={"openvino_runtime": RUNTIME})


def _setup(tmp_path: Path) -> dict[str, Any]:
    """A rehearsal folder with the first-stage run and the fp32 quality run the int8 step reads, a quantised
    model folder (its manifest only), and the step's arguments."""
    directory = tmp_path / "reh"
    queries = {f"q{i:02d}": "frage " * (i + 1) for i in range(4)}
    candidates = {q: [f"{q}-{d}" for d in range(30)] for q in queries}
    texts = {d: d for ds in candidates.values() for d in ds}
    qrels = {q: {f"{q}-{d}": 1 for d in range(0, 30, 7)} for q in queries}
    first = directory / "runs" / "first-stage" / "vector-71k.trec"
    write_run(
        first,
        {q: [(d, 100.0 - i) for i, d in enumerate(c)] for q, c in candidates.items()},
        tag="first-stage/vector-71k",
    )
    fp32 = {
        q: sorted(((d, float(d.split("-")[1])) for d in c), key=lambda t: -t[1])
        for q, c in candidates.items()
    }
    write_run(
        directory / "runs" / "vector-71k" / "minilm-standin@100.trec",
        fp32,
        tag="vector-71k/minilm-standin@100",
    )
    folder = tmp_path / "int8-model"
    folder.mkdir()
    manifest = {
        "files": {"openvino_model.bin": "a" * 64},
        "quantization": {},
        "inference_precision": INFERENCE_PRECISION,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    sampled = ["q02", "q00", "q03"]
    latency = {
        "fp32_ns": {k: {q: 1_000_000 * (i + 1) * k for i, q in enumerate(sampled)} for k in (20, 100)},
        "query_ids": sampled,
    }
    return {
        "directory": directory,
        "queries": queries,
        "first_stage_run": first,
        "texts": texts,
        "qrels": qrels,
        "fp32_latency": latency,
        "quantized": (folder, {"calibration": {"n": 300}, "reused": True}),
    }


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The folders the int8 step loaded its model from (a fake model, counted)."""
    loaded: list[Path] = []

    def load(folder: Path) -> FakeInt8:
        loaded.append(folder)
        return FakeInt8()

    monkeypatch.setattr(step, "Int8BiEncoder", load)
    return loaded


def _run(args: dict[str, Any], log: list[str]) -> dict[str, Any]:
    return step.run_int8_step(
        args["directory"],
        queries=args["queries"],
        first_stage_run=args["first_stage_run"],
        texts=args["texts"],
        qrels=args["qrels"],
        log=log.append,
        fp32_latency=args["fp32_latency"],
        quantized=args["quantized"],
    )


def test_a_finished_int8_step_is_kept_on_resume(tmp_path: Path, loads: list[Path]) -> None:
    args, log = _setup(tmp_path), []
    first = _run(args, log)
    assert len(loads) == 1
    path = args["directory"] / "int8.json"
    written = path.read_bytes()
    record = json.loads(written)
    assert set(record["computed_from"]) == {
        "int8_model",
        "first_stage_run",
        "fp32_run",
        "fp32_latency",
        "inputs",
    }
    assert record["latency_ns"]["fp32"]["100"] == [100e6, 200e6, 300e6] and len(record["latency_blocks"]) == 2
    again = _run(args, log)
    assert len(loads) == 1  # neither loaded nor timed again
    assert path.read_bytes() == written
    assert again == record and again["queries"] == first["queries"]
    assert any("int8.json was computed from these same inputs; kept, not timed again" in m for m in log)


def _new_first_stage(args: dict[str, Any]) -> None:
    run = {q: [(f"{q}-{d}", 100.0 - i) for i, d in enumerate(range(30))] for q in args["queries"]}
    run["q01"] = [(d, 100.0 - i) for i, (d, _) in enumerate(reversed(run["q01"]))]  # another order
    write_run(args["first_stage_run"], run, tag="first-stage/vector-71k")


def _new_fp32_run(args: dict[str, Any]) -> None:
    run = {q: [(f"{q}-{d}", float(d)) for d in reversed(range(30))] for q in args["queries"]}
    run["q02"][0] = ("q02-29", 40.0)  # one score changed
    write_run(
        args["directory"] / "runs" / "vector-71k" / "minilm-standin@100.trec",
        run,
        tag="vector-71k/minilm-standin@100",
    )


def _new_text(args: dict[str, Any]) -> None:
    args["texts"] = {**args["texts"], "q01-3": "ein anderer Text"}


def _new_fp32_times(args: dict[str, Any]) -> None:
    ns = args["fp32_latency"]["fp32_ns"]
    args["fp32_latency"] = {**args["fp32_latency"], "fp32_ns": {**ns, 20: {**ns[20], "q00": 1}}}


def _new_model(args: dict[str, Any]) -> None:
    manifest = args["quantized"][0] / MANIFEST
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["files"]["openvino_model.bin"] = "b" * 64
    manifest.write_text(json.dumps(data), encoding="utf-8")


def _block_gone(args: dict[str, Any]) -> None:
    record = json.loads((args["directory"] / "int8.json").read_text(encoding="utf-8"))
    (args["directory"] / record["latency_blocks"][0]).unlink()


def _older_record(args: dict[str, Any]) -> None:
    path = args["directory"] / "int8.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    del record["computed_from"]
    path.write_text(json.dumps(record), encoding="utf-8")


CHANGES = (
    _new_first_stage,
    _new_fp32_run,
    _new_text,
    _new_fp32_times,
    _new_model,
    _block_gone,
    _older_record,
)


def _basis(args: dict[str, Any]) -> dict[str, Any]:
    """``computed_from`` of the step's inputs now, as ``run_int8_step`` computes it."""
    run = read_run(args["first_stage_run"], allow_unknown_queries=True)
    qids = [q for q in sorted(args["queries"]) if q in run]
    fp32 = args["directory"] / "runs" / "vector-71k" / "minilm-standin@100.trec"
    return step.computed_from(
        args["quantized"][0],
        args["first_stage_run"],
        fp32,
        args["fp32_latency"],
        {q: args["queries"][q] for q in qids},
        {q: [d for d, _ in run[q][: step.SPEARMAN_DEPTH]] for q in qids},
        args["texts"],
        args["qrels"],
    )


def test_an_int8_record_from_other_inputs_is_not_kept(tmp_path: Path, loads: list[Path]) -> None:
    args, log = _setup(tmp_path), []
    _run(args, log)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    saved = {p: p.read_bytes() for p in files}
    assert step.finished_record(args["directory"], _basis(args)) is not None
    for change in CHANGES:  # each on the finished step, which is then put back
        changed = {**args}
        change(changed)
        assert step.finished_record(args["directory"], _basis(changed)) is None, change.__name__
        for p in (p for p in tmp_path.rglob("*") if p.is_file() and p not in saved):
            p.unlink()
        for p, data in saved.items():
            p.write_bytes(data)
    before = json.loads(saved[args["directory"] / "int8.json"])
    _new_text(args)  # the step run on changed inputs times again and replaces the record
    again = _run(args, log)
    assert len(loads) == 2 and not any("kept, not timed again" in m for m in log)
    after = json.loads((args["directory"] / "int8.json").read_text(encoding="utf-8"))
    assert after == json.loads(json.dumps(again, default=str)) and after["computed_from"] == _basis(args)
    assert after["computed_from"] != before["computed_from"]
    assert all((args["directory"] / b).is_file() for b in after["latency_blocks"])
