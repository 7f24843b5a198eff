"""The int8 stand-in's cache key (``bench.rehearse.int8.standin_key``) holds the bytes of the code that makes
the quantised folder (``RECIPE_MODULES``), so a folder made by older code is never reused, and the folder is
checked or made under a lock beside it. No quantisation: the child is replaced by a fake."""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bench.int8.quantize import quantize_model
from bench.rehearse import int8 as int8_mod
from bench.rehearse.quantize_child import run_in_child
from bench.rerankers.openvino.config import QuantSpec
from bench.rerankers.openvino.manifest import write_manifest


def _fake_digests(monkeypatch: pytest.MonkeyPatch, changed: dict[str, str]) -> None:
    monkeypatch.setattr(int8_mod, "module_sha256", lambda name: changed.get(name, "0" * 64))


def test_the_recipe_modules_are_the_code_that_makes_the_folder() -> None:
    made_by = {f.__module__ for f in (quantize_model, run_in_child, QuantSpec, write_manifest)}
    assert set(int8_mod.RECIPE_MODULES) == made_by


def test_module_sha256_is_the_digest_of_the_source_file() -> None:
    for name in int8_mod.RECIPE_MODULES:
        source = Path(importlib.import_module(name).__file__ or "")
        assert int8_mod.module_sha256(name) == hashlib.sha256(source.read_bytes()).hexdigest()


def test_the_key_changes_with_the_recipe_code_and_stays_with_other_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fake_digests(monkeypatch, {})
    base = int8_mod.standin_key("calibration", 128)
    assert int8_mod.standin_key("calibration", 128) == base  # deterministic
    for name in int8_mod.RECIPE_MODULES:
        _fake_digests(monkeypatch, {name: "1" * 64})
        assert int8_mod.standin_key("calibration", 128) != base, name
    for name in ("bench.rehearse.latency", "bench.rerankers.standin", "bench.int8.calibration"):
        _fake_digests(monkeypatch, {name: "1" * 64})
        assert int8_mod.standin_key("calibration", 128) == base, name


def _fake_child(calls: list[Path]) -> Any:
    def child(source: Path, out: Path, **kw: Any) -> dict[str, Any]:
        calls.append(out)
        out.mkdir(parents=True, exist_ok=True)
        return {}

    return child


def test_a_folder_made_by_other_recipe_code_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path))
    calls: list[Path] = []
    monkeypatch.setattr(int8_mod, "run_in_child", _fake_child(calls))
    monkeypatch.setattr(int8_mod, "verify_folder", lambda folder: {})  # the fake's empty folder passes
    _fake_digests(monkeypatch, {})
    first, made = int8_mod.quantized_standin(lambda _m: None)
    again, reused = int8_mod.quantized_standin(lambda _m: None)
    assert (again, made["reused"], reused["reused"], calls) == (first, False, True, [first])
    _fake_digests(monkeypatch, {"bench.int8.quantize": "1" * 64})
    other, remade = int8_mod.quantized_standin(lambda _m: None)
    assert other != first and remade["reused"] is False and calls == [first, other]


def test_the_folder_is_made_under_a_lock_beside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another holder of the lock (a second rehearsal or test session on the same cache) makes
    ``quantized_standin`` wait before it looks at or makes the folder."""
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path))
    calls: list[Path] = []
    monkeypatch.setattr(int8_mod, "run_in_child", _fake_child(calls))
    _fake_digests(monkeypatch, {})
    key = int8_mod.standin_key(int8_mod.rehearsal_calibration()[0].digest(), 128)
    lock = tmp_path / "int8" / f".minilm-standin-{key}.lock"
    lock.parent.mkdir(parents=True)
    got: list[Path] = []
    with lock.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        worker = threading.Thread(target=lambda: got.append(int8_mod.quantized_standin(lambda _m: None)[0]))
        worker.start()
        time.sleep(0.3)
        assert calls == [] and worker.is_alive()  # waiting for the lock
        fcntl.flock(fh, fcntl.LOCK_UN)
    worker.join(timeout=30)
    assert got == calls == [tmp_path / "int8" / f"minilm-standin-{key}"]
