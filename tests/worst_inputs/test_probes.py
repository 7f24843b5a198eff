"""One test per probe of the worst-inputs round (the swap's probes: test_swap.py).

Each ends as the bad-input rule asks: exit 0 with a stated warning (a line and a field of the record), or
exit 1 with one line naming the file (and the line) and the fix; never a traceback, never a signal.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import shutil
import subprocess
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import analysis.core.atomic as atomic
from analysis.cli import cli as analysis_cli
from analysis.costs.prices import CostInputError, read_prices
from analysis.inputs.columns import SEPARATORS, run_line_problem, split_columns
from analysis.inputs.trec import TrecFormatError, read_qrels, read_run_table
from bench.audit.committed import file_problems
from bench.cli import cli as bench_cli
from bench.core.errors import BenchError
from bench.doctor.checks import keys
from bench.firststage import preflight
from bench.rerankers.voyage import read_api_key
from bench.status.command import _prepare
from tests.conftest import REPO_ROOT
from tests.support.loopback import Loopback, Response
from tests.worst_inputs.conftest import MODEL, STAGE, one_line, run

RUN = f"{STAGE}/{MODEL}@20.trec"


def report(
    study: Path, out: Path, *extra: str, runs: Path | None = None, qrels: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return run(
        [
            "analysis",
            "report",
            "--runs",
            str(runs or study / "runs"),
            "--qrels",
            str(qrels or study / "qrels.tsv"),
            "--out",
            str(out),
            "--no-figures",
            *extra,
        ]
    )


def runs_with(study: Path, tmp_path: Path, text: str) -> Path:
    """A copy of the study's runs whose reranked run is ``text``."""
    runs = tmp_path / "runs"
    shutil.copytree(study / "runs", runs)
    (runs / RUN).write_text(text, encoding="utf-8")
    return runs


# --- silent acceptances --------------------------------------------------------------------------------


def test_a_misspelt_model_in_flags_is_refused(study: Path, tmp_path: Path) -> None:
    flags = tmp_path / "flags.json"
    flags.write_text('{\n "gte-base": "seen",\n "bge-v2-m4": "trained on MIRACL"\n}\n', encoding="utf-8")
    line = one_line(
        report(study, tmp_path / "out", "--flags", str(flags)),
        f"{flags}:3",
        "'bge-v2-m4'",
        "contamination mark would be lost",
        "Fix:",
    )
    assert "bge-v2-m3" in line  # the fix lists the plan's run ids
    assert not (tmp_path / "out").exists()


def test_a_bom_inside_the_qrels_is_refused(study: Path, tmp_path: Path) -> None:
    lines = (study / "qrels.tsv").read_text().splitlines(keepends=True)
    qrels = tmp_path / "qrels.tsv"  # two files concatenated, the second with its byte-order mark
    qrels.write_bytes("".join(lines[:5]).encode() + b"\xef\xbb\xbf" + "".join(lines[5:]).encode())
    one_line(
        report(study, tmp_path / "out", qrels=qrels),
        f"{qrels}:6 (TREC qrels file)",
        "byte-order mark",
        "Fix:",
    )
    with pytest.raises(TrecFormatError, match=":6 "):
        read_qrels(qrels)


def test_a_bom_inside_a_run_is_refused_by_both_readers(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = (study / "runs" / RUN).read_text().splitlines(keepends=True)
    path = tmp_path / "run.trec"
    path.write_bytes("".join(lines[:3]).encode() + b"\xef\xbb\xbf" + "".join(lines[3:]).encode())
    for reader in ("fast", "reference"):
        monkeypatch.setenv("ANALYSIS_TREC_READER", reader)
        with pytest.raises(
            TrecFormatError,
            match=r":4 \(TREC run file\): expected plain text, found a UTF-8 "
            "byte-order mark",
        ):
            read_run_table(path)


def test_a_bom_inside_a_bench_text_file_is_refused(tmp_path: Path) -> None:
    from bench.data.miracl import read_topics

    topics = tmp_path / "topics.tsv"
    topics.write_bytes(b"\xef\xbb\xbfq1\tfirst\nq2\tsecond\n\xef\xbb\xbfq3\tthird\n")
    with pytest.raises(BenchError, match=f"{topics}:3: a UTF-8 byte-order mark"):
        read_topics(topics)


@pytest.mark.parametrize("separator", ["\xa0", "\u2028", "\x1c"])
def test_one_column_rule_for_the_report_the_audit_and_trec_eval(
    study: Path, tmp_path: Path, separator: str
) -> None:
    """trec_eval splits on C isspace() bytes only; NBSP and U+2028 are part of a column, \\x1c is a stray
    control character: the report and audit row 7 refuse the same line."""
    assert SEPARATORS == " \t\n\x0b\x0c\r"
    assert split_columns(f"q{separator}Q0 d 1 1.0 t") == [f"q{separator}Q0", "d", "1", "1.0", "t"]
    text = (study / "runs" / RUN).read_text()
    first, rest = text.split("\n", 1)
    bad = first.replace(" ", separator, 1) + "\n" + rest
    runs = runs_with(study, tmp_path, bad)
    line = one_line(report(study, tmp_path / "out", runs=runs), f"{runs / RUN}:1 (TREC run file)")
    problems = file_problems(f"runs/{RUN}", bad.encode(), [], set())
    assert problems and problems[0].startswith(f"runs/{RUN} line 1: not a TREC run line"), problems
    assert run_line_problem(text) is None and file_problems(f"runs/{RUN}", text.encode(), [], set()) == []
    if separator == "\xa0":
        assert "U+00A0" in line and "does not separate columns" in line


def test_qrels_without_a_relevant_label_name_no_best_model(study: Path, tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text(
        "".join(
            " ".join([*ln.split()[:3], "0"]) + "\n" for ln in (study / "qrels.tsv").read_text().splitlines()
        )
    )
    one_line(report(study, tmp_path / "out", qrels=qrels), str(qrels), "no", "relevant", "best model", "Fix:")
    assert not (tmp_path / "out").exists()


def test_title_and_notes_cannot_make_markdown_structure(study: Path, tmp_path: Path) -> None:
    one_line(
        report(study, tmp_path / "out", "--title", "Report\n## injected"), "--title", "line break", "Fix:"
    )
    flags = tmp_path / "flags.json"
    flags.write_text(json.dumps({"gte-base": "seen\n# injected"}), encoding="utf-8")
    one_line(report(study, tmp_path / "out", "--flags", str(flags)), f"{flags}:1", "gte-base", "line break")
    assert not (tmp_path / "out").exists()


def test_a_nul_in_the_q0_column_is_refused(study: Path, tmp_path: Path) -> None:
    text = (study / "runs" / RUN).read_text()
    runs = runs_with(study, tmp_path, text.replace(" Q0 ", " Q\x000 ", 1))
    one_line(
        report(study, tmp_path / "out", runs=runs),
        f"{runs / RUN}:1 (TREC run file)",
        "control character '\\x00'",
    )


def test_another_run_tag_on_one_line_is_refused(study: Path, tmp_path: Path) -> None:
    lines = (study / "runs" / RUN).read_text().splitlines(keepends=True)
    lines[4] = lines[4].rsplit(" ", 1)[0] + " other-run\n"
    runs = runs_with(study, tmp_path, "".join(lines))
    one_line(
        report(study, tmp_path / "out", runs=runs),
        f"{runs / RUN}:5 (TREC run file)",
        "'other-run'",
        "run tag",
    )


@pytest.mark.parametrize("env", ["UID\nGID=1000\n", "UID=1000\nGID=\n", "UID=\nGID=\n"])
def test_env_uid_gid_without_values_is_not_prepared(tmp_path: Path, env: str) -> None:
    (tmp_path / ".env").write_text(env)
    found = _prepare(tmp_path)
    assert found.missing and all("line holds no number" in what for what, _ in found.missing), found
    (tmp_path / ".env").write_text("UID=1000\nGID=1000\n")
    assert not _prepare(tmp_path).missing


def test_an_api_key_of_quoted_spaces_is_not_a_key(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text('UID=1\nVOYAGE_API_KEY="   "\n')
    with pytest.raises(BenchError, match=f"{dotenv}:2: VOYAGE_API_KEY holds whitespace"):
        read_api_key(env={}, dotenv=dotenv)

    machine = type("M", (), {"env": {}, "root": tmp_path})()
    (outcome,) = keys(machine, "latency-api")
    assert outcome.line().startswith("PROBLEM") and "holds whitespace" in outcome.message, outcome.line()


def test_a_rerun_that_drops_costs_says_so(study: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert report(study, out).returncode == 0
    (out / "costs.json").write_text("{}\n")  # as an earlier report with --prices left it
    proc = report(study, out)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    warning = [ln for ln in proc.stderr.splitlines() if ln.startswith("Warning: ")]
    assert len(warning) == 1 and f"{out / 'costs.json'}" in warning[0] and "--prices" in warning[0], warning
    assert not (out / "costs.json").exists()
    assert (
        "Removed from the earlier report in this folder (not produced by this one): costs.json"
        in (out / "report.md").read_text()
    )


# --- tracebacks ----------------------------------------------------------------------------------------


def _git_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy2(REPO_ROOT / "PLAN.md", root / "PLAN.md")
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "PLAN.md"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "plan"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


def test_a_merkle_height_that_is_no_ascii_integer(tmp_path: Path) -> None:
    from bench.integrity.ots import MERKLE_ROOTS_FORMAT

    root = _git_root(tmp_path)
    roots = root / "timestamps" / "bitcoin-merkle-roots.json"
    roots.parent.mkdir()
    roots.write_text(
        json.dumps({"format": MERKLE_ROOTS_FORMAT, "byte_order": "display", "roots": {"²": "a" * 64}})
    )
    one_line(run(["bench", "timestamps", "verify"], root=root), str(roots), "'²'", "Fix:")
    audit = run(["bench", "audit"], root=root)
    assert audit.returncode == 1 and "Traceback" not in audit.stderr + audit.stdout, audit.stderr
    row = next(x for x in audit.stdout.splitlines() if "timestamps" in x)
    assert "FAIL" in row and "'²'" in row, row


def test_a_proof_that_is_a_folder(tmp_path: Path) -> None:
    root = _git_root(tmp_path)
    (root / "PLAN.md.ots").mkdir()
    proc = run(["bench", "timestamps", "verify"], root=root)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert "corrupt  PLAN.md.ots is a folder, not a proof file" in proc.stdout, proc.stdout


def test_bench_root_that_is_a_file() -> None:
    proc = run(["bench", "timestamps", "verify"], root=REPO_ROOT / "README.md")
    one_line(proc, f"BENCH_ROOT={REPO_ROOT / 'README.md'} is not a folder", "Fix:")


def test_bench_status_with_an_env_that_is_not_utf8(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    shutil.copy2(REPO_ROOT / "docs" / "runbook.md", root / "docs" / "runbook.md")
    (root / ".env").write_bytes(b"UID=1000\nGID=1000\xff\n")
    proc = run(["bench", "status"], root=root)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert ".env is not UTF-8 text" in proc.stdout, proc.stdout


def test_reproduce_on_runs_of_another_corpus(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "runs" / "first-stage").mkdir(parents=True)
    (root / "results" / "quality").mkdir(parents=True)
    for name in ("PLAN.md", "datasets.lock", "data/bundled"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (REPO_ROOT / name).is_dir() else shutil.copy2)(REPO_ROOT / name, root / name)
    topics = REPO_ROOT / "data/bundled/miracl-de-dev/topics.miracl-v1.0-de-dev.tsv"
    qid = topics.read_text(encoding="utf-8").split("\t")[0]
    run_file = root / "runs" / "first-stage" / f"{STAGE}.trec"
    run_file.write_text(f"{qid} Q0 not-in-the-sample#0 1 1.0 t\n")
    (root / "results" / "quality" / f"{STAGE}.json").write_text('{"runs": [{"model": "bm25-standin"}]}')
    proc = run(["bench", "reproduce", "--bundled", "--model", "bm25-standin"], root=root)
    one_line(
        proc,
        f"{run_file}:1",
        "'not-in-the-sample#0'",
        "bundled sample",
        "Fix:",
        progress=("bench: rehearsal: exempt", "verifying datasets.lock"),
    )
    assert not (root / "reproduce").exists()


# the keyword-full disk and memory predictions gzip the bundled sample (fixed, locked data) for their byte
# figures: computed once for these tests (the real figures)
_SAMPLE_FIGURES = {
    name: functools.cache(getattr(preflight, name))
    for name in ("load_sample", "_sample_bytes", "_sample_sorted_ratio")
}


def doctor(
    step: str, monkeypatch: pytest.MonkeyPatch, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``bench doctor STEP`` through its command line in this process (from the repository root), as a
    finished process: the checks import torch, which a process of its own would import again each time. An
    exception that escapes the command (a traceback for the user) is this test's failure."""
    monkeypatch.chdir(REPO_ROOT)
    for name, shared in _SAMPLE_FIGURES.items():
        monkeypatch.setattr(preflight, name, shared)
    result = CliRunner().invoke(bench_cli, ["doctor", step], env=env)
    assert isinstance(result.exception, SystemExit | None), "".join(
        traceback.format_exception(result.exception)
    )
    return subprocess.CompletedProcess(
        ["bench", "doctor", step], result.exit_code, result.stdout, result.stderr
    )


@pytest.mark.parametrize("step", ["latency-cpu", "prepare", "first-stages", "latency-api"])
def test_doctor_answers_every_step(step: str, monkeypatch: pytest.MonkeyPatch) -> None:
    proc = doctor(step, monkeypatch)
    assert proc.returncode in (0, 1), f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr + proc.stdout and "the check failed" not in proc.stdout, proc.stdout
    assert "no compose service" not in proc.stdout


# --- messages ------------------------------------------------------------------------------------------


def _special(kind: str, path: Path) -> None:
    if kind == "loop":
        path.symlink_to(path.name)
    elif kind == "dangling":
        path.symlink_to("gone.trec")
    else:
        os.mkfifo(path)


SPECIAL = [
    ("loop", "a symbolic link loop"),
    ("dangling", "a symbolic link to gone.trec, which does not exist"),
    ("fifo", "a named pipe (FIFO)"),
]


@pytest.mark.parametrize(("kind", "said"), SPECIAL)
def test_a_run_that_is_no_regular_file_gets_its_cause(
    study: Path, tmp_path: Path, kind: str, said: str
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(study / "runs", runs)
    target = runs / STAGE / "qwen3-0.6b@20.trec"
    _special(kind, target)
    line = one_line(report(study, tmp_path / "out", runs=runs), str(target), said)
    assert "rename it to" not in line


def test_a_huge_id_is_cut_in_the_message(study: Path, tmp_path: Path) -> None:
    huge = "q" * 10_000_000
    text = (study / "runs" / RUN).read_text()
    runs = runs_with(study, tmp_path, text + f"{huge} Q0 d 1 1.0 {text.split()[5]}\n")
    line = one_line(
        report(study, tmp_path / "out", runs=runs), "expected a query id of the qrels", "…(10000000 bytes)"
    )
    assert len(line) < 2000


def test_a_price_of_1e308_names_the_prices_file(tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text(
        '[api.voyage-rerank-3]\nvalue = 1e308\ncurrency = "USD"\nunit = "per million tokens"\n'
        'date = 2026-01-02\nsource = "https://example.org/pricing"\n'
    )
    with pytest.raises(CostInputError) as refused:
        read_prices(prices)
    assert str(refused.value).startswith(f"{prices}:2") and "far above any price" in str(refused.value)


@pytest.mark.parametrize("earlier", [False, True])
def test_a_full_disk_names_the_path_and_no_report_that_was_not_there(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, earlier: bool
) -> None:
    out = tmp_path / "out"
    if earlier:
        assert report(study, out).returncode == 0
        before = (out / "report.md").read_bytes()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    result = CliRunner().invoke(
        analysis_cli,
        [
            "report",
            "--runs",
            str(study / "runs"),
            "--qrels",
            str(study / "qrels.tsv"),
            "--out",
            str(out),
            "--no-figures",
        ],
    )
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit | None), result.output
    message = result.output.strip()
    assert message.startswith(f"Error: {out / 'quality'}") and "No space left on device" in message, message
    if earlier:
        assert f"the earlier report in {out} is left as it was" in message
        assert (out / "report.md").read_bytes() == before
    else:
        assert "earlier report" not in message and f"no report was written to {out}" in message
        assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["out"] if earlier else [])


@pytest.fixture
def foreign_server() -> Iterator[str]:
    body = b"<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head><body></body></html>"
    page = Response(200, body, {"Content-Type": "text/html"})
    with Loopback(lambda request: page) as server:
        yield server.url


def test_doctor_never_prints_a_foreign_servers_html(
    foreign_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"BENCH_TYPESENSE_URL": foreign_server, "BENCH_TYPESENSE_API_KEY": "x"}
    proc = doctor("first-stages", monkeypatch, env)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert "<html" not in proc.stdout.lower() and "welcome to nginx" not in proc.stdout.lower(), proc.stdout
    assert "a text/html body of" in proc.stdout, proc.stdout
