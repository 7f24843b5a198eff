"""Several adapter-check references in one process (``run_reference_batch``): the same scores as one process
per reference, one job's failure stays its own, and a process that dies mid-way costs only the job it ran."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from bench.equality.references import (
    DECIDING,
    ReferenceSpec,
    ReferenceUnavailable,
    run_reference_batch,
)
from tests.equality.test_check_tiny import QWEN_SPEC, qwen_queries, runner_for


@pytest.mark.model
def test_batch_scores_equal_one_process_per_reference(
    tiny_models: dict[str, Path], queries_factory: Any, forked_main: Path
) -> None:
    """The batch on test_check_tiny's queries, so the one-process-per-reference run to compare with is that
    file's card-qwen3 run (``run_reference``), made once per test process (and here if it has not run)."""
    long, short = qwen_queries(queries_factory)
    queries = [*long, *short]
    bge = DECIDING["bge-v2-m3"]
    unknown = ReferenceSpec("no-such-reference", "main", "unknown script key")
    jobs = [
        (bge, tiny_models["bge-v2-m3"]),
        (unknown, tiny_models["bge-v2-m3"]),
        (QWEN_SPEC, tiny_models["qwen3-0.6b"]),
    ]
    got = run_reference_batch(jobs, queries, timeout_s=300)
    assert len(got) == 3
    assert isinstance(got[1], ReferenceUnavailable) and "unknown reference" in str(got[1])
    alone = runner_for(tiny_models["qwen3-0.6b"], queries)(QWEN_SPEC, queries)
    assert isinstance(got[2], dict) and got[2]["scores"] == alone["scores"]  # same code, same inputs: equal
    assert isinstance(got[0], dict) and set(got[0]["scores"]) == {q.qid for q in queries}
    assert all(len(got[0]["scores"][q.qid]) == len(q.passages) for q in queries)


def fake_python(tmp_path: Path, body: str) -> Path:
    """A stand-in interpreter for the main environment: a shell script called as ``PY run.py IN OUT``."""
    py = tmp_path / "python"
    py.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    py.chmod(py.stat().st_mode | stat.S_IEXEC)
    return py


def test_a_process_that_dies_costs_only_its_job(
    tmp_path: Path, queries_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = queries_factory(1, 2)
    scores = '{"q1": [0.1, 0.2]}'.replace("q1", queries[0].qid)
    calls = tmp_path / "calls"
    # first start: job 1 done, dies in job 2 (as an out-of-memory kill would); second start: the rest
    py = fake_python(
        tmp_path,
        f'echo x >> "{calls}"\n'
        f'if [ "$(wc -l < "{calls}")" -eq 1 ]; then\n'
        f'  echo \'{{"results": [{{"reference": "card-seqcls", "scores": {scores}}}]}}\' > "$3"; '
        "echo Killed >&2; exit 137\nfi\n"
        f'echo \'{{"results": [{{"reference": "card-seqcls", "scores": {scores}}}]}}\' > "$3"\n',
    )
    monkeypatch.setenv("BENCH_REFERENCE_PYTHON_MAIN", str(py))
    spec = DECIDING["bge-v2-m3"]
    got = run_reference_batch([(spec, tmp_path), (spec, tmp_path), (spec, tmp_path)], queries)
    assert isinstance(got[0], dict) and got[0]["scores"][queries[0].qid] == [0.1, 0.2]
    assert (
        isinstance(got[1], ReferenceUnavailable) and "exited 137" in str(got[1]) and "Killed" in str(got[1])
    )
    assert isinstance(got[2], dict)  # re-run in a fresh process
    assert calls.read_text().count("x") == 2


def test_missing_environment_is_each_jobs_reason(
    tmp_path: Path, queries_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_REFERENCE_PYTHON_TF457", str(tmp_path / "nope" / "bin" / "python"))
    got = run_reference_batch([(DECIDING["gte-base"], tmp_path)], queries_factory(1, 2))
    # the hint names the environment to install into: inside the image UV_PROJECT_ENVIRONMENT is /opt/venv
    hint = f"`UV_PROJECT_ENVIRONMENT={tmp_path / 'nope'} uv sync --project references/tf457 --frozen`"
    assert isinstance(got[0], ReferenceUnavailable) and hint in str(got[0])
