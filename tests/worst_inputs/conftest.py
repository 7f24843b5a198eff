"""Shared inputs of the worst-inputs tests: a small study on real qrels, and a runner that starts
each command in its own process (a signal or a traceback is seen as it would be by a user).

Each such process is forked from one server per test process (``tests/support/pyforks.py``) that has imported
what ``analysis`` imports and computed the code record (``tests/worst_inputs/warm.py``): the console script
runs in the fork as ``python SCRIPT ARGS`` runs it (its own pid, exit status, stdout and stderr), without
the ~1 CPU-s of imports and the code record each.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.inputs.trec import read_qrels
from analysis.simulation.synthetic import write_study
from tests.conftest import REPO_ROOT

QRELS = REPO_ROOT / "data" / "bundled" / "miracl-de-dev" / "qrels.miracl-v1.0-de-dev.tsv"
STAGE, MODEL = "keyword-71k", "gte-base"
_PYTHON: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def forked_python(analysis_python: str) -> None:
    """The stand-in ``python`` that :func:`run` starts commands with (tests/conftest.py's ``analysis_python``:
    one server per test process, started on its first run)."""
    _PYTHON["python"] = analysis_python


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "MPLBACKEND": "Agg", **extra}


def run(args: list[str], root: Path | None = None, **kw: object) -> subprocess.CompletedProcess[str]:
    """``args[0]`` is the console script (``analysis``, ``bench``) of this environment, run by the forked
    stand-in of this environment's ``python``."""
    extra = {"BENCH_ROOT": str(root)} if root is not None else {}
    script = Path(sys.executable).parent / args[0]
    return subprocess.run(
        [_PYTHON["python"], str(script), *args[1:]],
        cwd=REPO_ROOT,
        env=env(**extra),
        capture_output=True,
        text=True,
        timeout=600,
        **kw,
    )  # type: ignore[call-overload]


def one_line(
    proc: subprocess.CompletedProcess[str], *needles: str, code: int = 1, progress: tuple[str, ...] = ()
) -> str:
    """The process exited ``code`` with one ``Error:`` line (and no traceback) holding every needle; lines
    starting with ``Warning: `` or one of ``progress`` (a command's own progress lines) aside."""
    assert proc.returncode == code, f"exit {proc.returncode} (<0: a signal)\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = [x for x in proc.stderr.strip().splitlines() if not x.startswith(("Warning: ", *progress))]
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def write_qrels(path: Path, queries: int = 12, offset: int = 0) -> dict[str, dict[str, int]]:
    full = read_qrels(QRELS)
    qrels = {q: dict(full[q]) for q in sorted(full)[offset : offset + queries]}
    path.write_text("".join(f"{q} 0 {d} {r}\n" for q in qrels for d, r in qrels[q].items()))
    return qrels


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runs/ of one stage and one model on 12 real queries, qrels.tsv (12 queries) and qrels-b.tsv (11)."""
    root = tmp_path_factory.mktemp("worst41")
    qrels = write_qrels(root / "qrels.tsv")
    write_qrels(root / "qrels-b.tsv", queries=11)
    write_study(root / "runs", qrels, stages=[STAGE], models={MODEL: 1.5}, depths=(20,), tails=True)
    return root
