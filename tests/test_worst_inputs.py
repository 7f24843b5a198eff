"""No input of ours ends a command in a signal or a traceback.

Each command runs in its own process on the worst inputs a reviewer found: relevance labels that crashed
pytrec_eval (a segfault at 2^62), overflowed or collided with the reader's "unjudged" marker, and run files
whose messages misled (gzip, lone CR line ends, a huge rank, an unknown query, a bad --flags file). Each
must exit 1 (not a signal: a negative return code) with one line naming the file, the line and the fix.

The next rounds' probes live beside these in tests/worst_inputs/ (the swap under real signals and
two reports at once in test_swap.py, one test per probe in test_probes.py).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.inputs.qrels import UNJUDGED
from analysis.inputs.trec import read_qrels
from analysis.reporting.report import write_report
from analysis.simulation.synthetic import write_study
from tests.conftest import REPO_ROOT

QRELS = REPO_ROOT / "data" / "bundled" / "miracl-de-dev" / "qrels.miracl-v1.0-de-dev.tsv"
STAGE, MODEL = "keyword-71k", "gte-base"
BAD_LABELS = {
    "segfault": 2**62,  # pytrec_eval: (label + 1) * 8 bytes overflows, then writes out of bounds
    "c-long": 2**63,  # PyLong_AsLong overflows: SystemError in pytrec_eval
    "clamped": 10**20,  # numpy read it as 2^63 - 1 without a word
    "unjudged": UNJUDGED,  # turned a judged passage into an unjudged one
}


# each command is a process of its own forked from one server per test process (tests/support/pyforks.py;
# tests/conftest.py's ``analysis_python``, shared with tests/worst_inputs/ and test_properties) that has
# imported what `analysis` imports (numpy, click, the analysis package, pyarrow, pytrec_eval) and computed
# the code record (tests/worst_inputs/warm.py): the console script runs in the fork as `python SCRIPT ARGS`
# runs it (its exit status, stdout and stderr), without the ~1 CPU-s of imports and the record each;
# `bench` (BENCH_ROOT) is imported in the fork, never in the server
_PYTHON: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def forked_python(analysis_python: str) -> None:
    """The stand-in ``python`` that :func:`_run` starts commands with (tests/conftest.py)."""
    _PYTHON["python"] = analysis_python


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "MPLBACKEND": "Agg"}


def _run(args: list[str], root: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``args[0]`` is the console script (``analysis``, ``bench``) of this environment."""
    env = _env()
    if root is not None:
        env["BENCH_ROOT"] = str(root)
    script = Path(sys.executable).parent / args[0]
    return subprocess.run(
        [_PYTHON["python"], str(script), *args[1:]],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _assert_clean_refusal(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 1, f"exit {proc.returncode} (negative: killed by a signal)\n{proc.stderr}"
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Fix:" in lines[0], proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A committed-study layout on 12 real queries: runs/, results/ (what the report writes), qrels.tsv."""
    root = tmp_path_factory.mktemp("worst")
    full = read_qrels(QRELS)
    qrels = {q: full[q] for q in sorted(full)[:12]}
    (root / "qrels.tsv").write_text("".join(f"{q} 0 {d} {r}\n" for q in qrels for d, r in qrels[q].items()))
    write_study(root / "runs", qrels, stages=[STAGE], models={MODEL: 1.5}, depths=(20,), tails=True)
    write_report(root / "runs", root / "qrels.tsv", root / "results", figures=False)
    return root


def _bad_qrels(small: Path, tmp_path: Path, label: int) -> Path:
    lines = (small / "qrels.tsv").read_text().splitlines(keepends=True)
    q, it, d, _ = lines[1].split()
    lines[1] = f"{q} {it} {d} {label}\n"  # a passage of the run, judged
    path = tmp_path / "qrels.tsv"
    path.write_text("".join(lines))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD_LABELS))
def test_labels_out_of_range_are_refused_by_every_command(small: Path, tmp_path: Path, case: str) -> None:
    qrels = _bad_qrels(small, tmp_path, BAD_LABELS[case])
    run = small / "runs" / STAGE / f"{MODEL}@20.trec"
    where = (
        f"{qrels}:2 (TREC qrels file): expected an integer relevance label 0..65535, found {BAD_LABELS[case]}"
    )
    for args in (
        ["analysis", "metrics", "--qrels", str(qrels), "--run", str(run)],
        ["analysis", "check-pytrec", "--qrels", str(qrels), "--run", str(run)],
        [
            "analysis",
            "report",
            "--runs",
            str(small / "runs"),
            "--qrels",
            str(qrels),
            "--out",
            str(tmp_path / "out"),
            "--no-figures",
        ],
    ):
        _assert_clean_refusal(_run(args), where)
    assert not (tmp_path / "out" / "quality").exists()  # refused before anything was written
    audit = _run(["bench", "audit", "--qrels", str(qrels)], root=small)
    assert audit.returncode == 1, f"exit {audit.returncode}\n{audit.stderr}"
    assert "Traceback" not in audit.stderr + audit.stdout, audit.stderr
    row = next(x for x in audit.stdout.splitlines() if "results recomputed" in x)
    assert "FAIL" in row and where in audit.stdout, audit.stdout


def _bad_runs(tmp_path: Path, good: Path) -> dict[str, tuple[Path, str]]:
    """name -> (run file, what its one line must say)."""
    text = good.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    q, _, d, _, s, tag = lines[0].split()
    variants = {
        "gzip": (
            gzip.compress(text.encode()),
            " (TREC run file): expected plain text, found a gzip-compressed file",
        ),
        "lone-cr": (
            text.replace("\n", "\r").encode(),
            ":1 (TREC run file): expected 6 columns `qid Q0 docid rank score tag` per line, found ",
        ),
        "huge-rank": (
            f"{q} Q0 {d} 99999999999999999999 {s} {tag}\n{''.join(lines[1:])}".encode(),
            ":1 (TREC run file): expected ranks 1..",
        ),
        "unknown-query": (
            f"{text}no-such-query Q0 {d} 1 1.0 {tag}\n".encode(),
            f":{len(lines) + 1} (TREC run file): expected a query id of the qrels, found 'no-such-query'",
        ),
    }
    out: dict[str, tuple[Path, str]] = {}
    for name, (data, message) in variants.items():
        path = tmp_path / name / good.name
        path.parent.mkdir()
        path.write_bytes(data)
        out[name] = (path, message)
    return out


@pytest.mark.slow
def test_misleading_run_files_get_their_true_cause(small: Path, tmp_path: Path) -> None:
    good = small / "runs" / STAGE / f"{MODEL}@20.trec"
    qrels = small / "qrels.tsv"
    for name, (run, where) in _bad_runs(tmp_path, good).items():
        metrics = _run(["analysis", "metrics", "--qrels", str(qrels), "--run", str(run)])
        check = _run(["analysis", "check-pytrec", "--qrels", str(qrels), "--run", str(run)])
        runs = tmp_path / f"runs-{name}"
        shutil.copytree(small / "runs", runs)
        shutil.copyfile(run, runs / STAGE / good.name)
        report = _run(
            [
                "analysis",
                "report",
                "--runs",
                str(runs),
                "--qrels",
                str(qrels),
                "--out",
                str(tmp_path / f"out-{name}"),
                "--no-figures",
            ]
        )
        _assert_clean_refusal(metrics, f"{run}{where}")
        _assert_clean_refusal(check, f"{run}{where}")
        _assert_clean_refusal(report, f"{runs / STAGE / good.name}{where}")
        if name == "gzip":
            assert "gunzip" in metrics.stderr and "iconv" not in metrics.stderr
        if name == "lone-cr":
            assert "lone CR" in metrics.stderr and "tr '\\r' '\\n'" in metrics.stderr
        if name == "unknown-query":  # the fix each command really has
            assert "--allow-unknown-queries" in metrics.stderr
            for proc in (check, report):
                assert "allow" not in proc.stderr and "remove the lines of queries" in proc.stderr


@pytest.mark.slow
def test_a_bad_flags_file_is_named(small: Path, tmp_path: Path) -> None:
    flags = tmp_path / "flags.json"
    text = '{"gte-base": "seen in training",\n}'
    flags.write_text(text, encoding="utf-8")
    proc = _run(
        [
            "analysis",
            "report",
            "--runs",
            str(small / "runs"),
            "--qrels",
            str(small / "qrels.tsv"),
            "--out",
            str(tmp_path / "out"),
            "--no-figures",
            "--flags",
            str(flags),
        ]
    )
    # the line Python's own parser blames: the closing brace (line 2) on Python 3.11, the trailing comma
    # itself (line 1) on 3.14 (found by the Python 3.14 proxy run)
    with pytest.raises(json.JSONDecodeError) as parsed:
        json.loads(text)
    _assert_clean_refusal(proc, f"{flags}:{parsed.value.lineno}", "JSON")
    assert not (tmp_path / "out").exists()
