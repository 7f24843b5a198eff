"""``analysis report`` replaces its report whole or not at all.

As the reviewer found it: a real signal (SIGINT, SIGTERM, SIGKILL) sent at every step of the swap, before
and after it (``seam.py`` counts them), and a failed step. The exchange (Linux, ``renameat2``): after each,
``--out`` holds the complete old report or the complete new one (byte for byte) at once, before any
recovery, and the next run removes what was left and names it. The fallback swap (the exchange made
unavailable through the seam): the same after a signal or a failed rename, and after a SIGKILL between two
renames once the next writer has rolled it back from the journal. Entries of ``--out`` the report does not
own survive either swap with their content (files: the same inode). Two reports at once into one
``--out``: the second refuses with one line (the lock), never a mix.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import analysis.core.atomic as atomic
from analysis.core.atomic import out_lock
from analysis.reporting.codeinfo import code_record
from analysis.reporting.report import write_report
from tests.support.report_cli import invoke_report
from tests.worst_inputs.conftest import env, one_line

SEAM = Path(__file__).with_name("seam.py")
RENAMES = 4  # the fallback: quality/ and report.md (--no-figures), each: the old one to the trash, the new in
STEPS = 3  # the exchange: its journal written, the exchange, the old folder removed


def snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def versions(study: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    """The complete report A (qrels.tsv) and B (qrels-b.tsv: one label changed), each written alone."""
    lines = (study / "qrels.tsv").read_text().splitlines(keepends=True)
    q, it, d, label = lines[0].split()
    lines[0] = f"{q} {it} {d} {1 - int(label)}\n"
    (study / "qrels-b.tsv").write_text("".join(lines))
    refs = tmp_path_factory.mktemp("refs")
    out = {}
    for name, qrels in (("A", "qrels.tsv"), ("B", "qrels-b.tsv")):
        write_report(study / "runs", study / qrels, refs / name, title=f"report {name}", figures=False)
        out[name] = snapshot(refs / name)
    assert out["A"] != out["B"] and out["A"]["quality/study.json"] != out["B"]["quality/study.json"]
    return out


def report_args(study: Path, out: Path, which: str) -> list[str]:
    qrels = "qrels.tsv" if which == "A" else "qrels-b.tsv"
    return [
        "report",
        "--runs",
        str(study / "runs"),
        "--qrels",
        str(study / qrels),
        "--out",
        str(out),
        "--no-figures",
        "--title",
        f"report {which}",
    ]


class Forks:
    """``seam.py --serve``: each seam process forked from one process that has imported the analysis code."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started = 0
        self.server = subprocess.Popen(
            [sys.executable, str(SEAM), "--serve"],
            env=env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=(folder / "server.err").open("w"),
            text=True,
        )

    def ask(self, request: dict[str, object]) -> object:
        assert self.server.stdin is not None and self.server.stdout is not None
        self.server.stdin.write(json.dumps(request) + "\n")
        self.server.stdin.flush()
        answer = self.server.stdout.readline()
        assert answer, (self.folder / "server.err").read_text()
        return json.loads(answer)

    def close(self) -> None:
        assert self.server.stdin is not None
        self.server.stdin.close()
        self.server.wait(timeout=60)


class Forked:
    """A forked seam process, read as a ``subprocess.Popen``: pid, poll, wait, communicate, returncode."""

    def __init__(self, forks: Forks, pid: int, stdout: Path, stderr: Path) -> None:
        self.forks, self.pid, self.stdout, self.stderr = forks, pid, stdout, stderr
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            code = self.forks.ask({"wait": self.pid, "timeout": timeout})
            if code is None:
                raise subprocess.TimeoutExpired(str(SEAM), timeout or 0)
            self.returncode = int(code)  # type: ignore[call-overload]
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None:
            code = self.forks.ask({"wait": self.pid, "timeout": 0})
            self.returncode = None if code is None else int(code)  # type: ignore[call-overload]
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        return self.stdout.read_text(), self.stderr.read_text()


@pytest.fixture(scope="module")
def forks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Forks]:
    server = Forks(tmp_path_factory.mktemp("seam-forks"))
    yield server
    server.close()


def seam(
    forks: Forks, n: int, action: str, when: str, folder: Path, args: list[str], exchange: bool = True
) -> Forked:
    """``seam.py N ACTION WHEN FOLDER ARGS`` in a process forked by ``forks``; its output in files beside
    the server's (not in ``folder``, whose entries the tests count)."""
    extra = {"SEAM_CODE_RECORD": json.dumps(code_record())}  # the record of this code (seam.py)
    if not exchange:
        extra["SEAM_NO_EXCHANGE"] = "1"
    forks.started += 1
    out, err = forks.folder / f"{forks.started}.out", forks.folder / f"{forks.started}.err"
    argv = [str(n), action, when, str(folder), *args]
    pid = forks.ask({"argv": argv, "env": extra, "stdout": str(out), "stderr": str(err)})
    return Forked(forks, int(pid), out, err)  # type: ignore[call-overload]


def write_version(out: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)


def next_run_cleans(
    study: Path, versions: dict[str, dict[str, bytes]], tmp_path: Path, left: list[str]
) -> None:
    """The next run: cleans what was left (and says what it removed or put back), then writes B. In this
    process (the interrupted one was a process of its own and has ended): ``analysis report``'s command line
    through click."""
    out = tmp_path / "out"
    nxt = invoke_report(study / "runs", study / "qrels-b.tsv", out, "--title", "report B")
    assert nxt.exit_code == 0, (nxt.output, nxt.exception)
    assert snapshot(out) == versions["B"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    for name in left:  # each leftover named
        if not name.endswith(".lock"):
            assert name in nxt.stderr, nxt.stderr


def signal_exit(proc: subprocess.Popen[str], stderr: str, action: str) -> None:
    assert "Traceback" not in stderr, stderr
    if action == "SIGKILL":
        assert proc.returncode == -signal.SIGKILL, stderr
    elif action.startswith("SIG"):
        assert proc.returncode == 128 + getattr(signal, action), stderr
        assert f"Error: interrupted by {action}" in stderr, stderr


EXCHANGE_CASES = [
    (sig, n, "before") for sig in ("SIGINT", "SIGTERM", "SIGKILL", "oserror") for n in range(1, STEPS + 1)
]
EXCHANGE_CASES += [(sig, STEPS, "after") for sig in ("SIGINT", "SIGTERM", "SIGKILL")]


@pytest.mark.parametrize(("action", "n", "when"), EXCHANGE_CASES)
def test_a_signal_at_any_step_of_the_exchange_leaves_a_whole_report(
    study: Path,
    versions: dict[str, dict[str, bytes]],
    forks: Forks,
    tmp_path: Path,
    action: str,
    n: int,
    when: str,
) -> None:
    """Immediately after each (no recovery run first), ``--out`` is A or B whole: A while the exchange has not
    happened (steps 1, 2), B from the exchange on; a caught signal waits for the swap and ends with B."""
    out = tmp_path / "out"
    write_version(out, versions["A"])  # the earlier report
    proc = seam(forks, n, action, when, tmp_path, report_args(study, out, "B"))
    _, stderr = proc.communicate(timeout=300)
    signal_exit(proc, stderr, action)
    exchanged = n == STEPS or (action.startswith("SIG") and action != "SIGKILL")
    assert snapshot(out) == versions["B" if exchanged else "A"], stderr
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "out")
    if action == "SIGKILL":
        build = [x for x in left if x.endswith(".build")]
        # killed before step 1 the journal is not yet written; after step 3 the old folder is gone
        assert [x for x in left if not x.endswith((".build", ".lock"))] == ([] if n == 1 else [".out.swap"])
        assert len(build) == (0 if when == "after" else 1), left
    elif action == "oserror":
        done = int(stderr.rsplit("renames ", 1)[1])
        assert done == n, stderr
        if n < STEPS:  # before the exchange: nothing changed, nothing left
            assert proc.returncode == 1 and "the earlier report" in stderr and left == [], stderr
        else:  # the report is in; the old folder could not be removed: said, and left to the next writer
            assert proc.returncode == 0 and "the next writer" in stderr, stderr
            assert len(left) == 2 and ".out.swap" in left, left
    else:
        assert int(stderr.rsplit("renames ", 1)[1]) == STEPS, stderr
        assert left == [], left
    next_run_cleans(study, versions, tmp_path, left)


SIGNALS = ("SIGINT", "SIGTERM", "SIGKILL")
CASES = [(sig, n, "before") for sig in (*SIGNALS, "oserror") for n in range(1, RENAMES + 1)]
CASES += [(sig, RENAMES, "after") for sig in SIGNALS]


@pytest.mark.parametrize(("action", "n", "when"), CASES)
def test_fallback_a_signal_at_any_rename_leaves_a_whole_report(
    study: Path,
    versions: dict[str, dict[str, bytes]],
    forks: Forks,
    tmp_path: Path,
    action: str,
    n: int,
    when: str,
) -> None:
    """The fallback swap (no exchange): one rename per entry under a journal."""
    out = tmp_path / "out"
    write_version(out, versions["A"])  # the earlier report
    proc = seam(forks, n, action, when, tmp_path, report_args(study, out, "B"), exchange=False)
    _, stderr = proc.communicate(timeout=300)
    signal_exit(proc, stderr, action)
    if action == "oserror":
        assert proc.returncode == 1, stderr
        assert "Input/output error (injected)" in stderr and "the earlier report" in stderr, stderr
    if action != "SIGKILL":  # the seam was reached; a signal waits for the swap to finish
        done = int(stderr.rsplit("renames ", 1)[1])
        # a signal: the whole swap; a failed rename: it, then each one done before it undone
        assert done == (RENAMES if action.startswith("SIG") else n + n - 1), stderr
    now = snapshot(out)
    if action == "SIGKILL" and now not in (versions["A"], versions["B"]):
        # killed between two renames (no signal can be caught): the journal beside --out says how to put the
        # earlier report back; any later writer does so under the lock before anything else
        assert (tmp_path / ".out.swap").is_file()
        with out_lock(out) as said:
            assert any("put back" in line for line in said), said
        now = snapshot(out)
        assert now == versions["A"]
    assert now in (versions["A"], versions["B"]), sorted(now)
    if action == "oserror":
        assert now == versions["A"]
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "out")
    if action != "SIGKILL":  # the process cleaned up after itself
        assert left == [], left
    next_run_cleans(study, versions, tmp_path, left)


def test_two_reports_at_once_never_mix(
    study: Path, versions: dict[str, dict[str, bytes]], forks: Forks, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first = seam(forks, 1, "pause", "before", tmp_path, report_args(study, out, "A"))
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "paused").exists():  # A holds the lock and stands inside its swap
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        # the second: a process of its own too (forked, no seam), as a finished process for one_line
        other = seam(forks, 0, "none", "before", tmp_path, report_args(study, out, "B"))
        rc = other.wait(timeout=300)
        second = subprocess.CompletedProcess(["analysis"], rc, *other.communicate())
        line = one_line(
            second, str(out), "another analysis report", f"pid {first.pid}", "Fix:", progress=("renames 0",)
        )
        assert "wait for it to finish" in line
    finally:
        (tmp_path / "go").write_text("")
    assert first.wait(timeout=300) == 0, first.communicate()
    assert snapshot(out) == versions["A"]


def test_two_reports_started_together(
    study: Path, versions: dict[str, dict[str, bytes]], forks: Forks, tmp_path: Path
) -> None:
    """No pause: whichever takes the lock first writes; the other refuses or (having started after the first
    finished) writes its own whole report; never a mix. Each through ``seam.py`` with no seam (N 0)."""
    for round_ in range(3):
        out = tmp_path / f"out{round_}"
        procs = {w: seam(forks, 0, "none", "before", tmp_path, report_args(study, out, w)) for w in "AB"}
        results = {w: (p.wait(timeout=300), p.communicate()[1]) for w, p in procs.items()}
        for rc, err in results.values():
            assert rc in (0, 1) and "Traceback" not in err, err
            assert rc == 0 or "another analysis report" in err, err
        assert any(rc == 0 for rc, _ in results.values())
        assert snapshot(out) in (versions["A"], versions["B"])
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(f".out{round_}.")) == []


def _not_owned(out: Path, outside: Path) -> dict[str, object]:
    """Entries the report does not own, put into ``out``: a file that is also a hard link elsewhere, a
    folder with a file in a subfolder (mode 0700), an empty folder, a symlink; ``out`` gets mode 0750."""
    (out / "notes.txt").write_text("mine\n")
    os.link(out / "notes.txt", outside)
    (out / "runs-extra" / "sub").mkdir(parents=True)
    (out / "runs-extra" / "sub" / "x.trec").write_text("q 0 d 1 1.0 t\n")
    os.chmod(out / "runs-extra" / "sub", 0o700)
    (out / "empty").mkdir()
    (out / "link").symlink_to("notes.txt")
    os.chmod(out, 0o750)
    x = out / "runs-extra" / "sub" / "x.trec"
    return {"ino": (out / "notes.txt").stat().st_ino, "x": x.stat().st_ino}


def _fail_einval(a: Path, b: Path) -> None:
    raise OSError(errno.EINVAL, "Invalid argument", str(a))


def _fail_exdev(a: Path, b: Path) -> None:
    raise OSError(errno.EXDEV, "Invalid cross-device link", str(a))


@pytest.mark.parametrize("way", ["exchange", "no renameat2", "EINVAL", "EXDEV"])
def test_entries_the_report_does_not_own_survive_the_swap(
    study: Path,
    versions: dict[str, dict[str, bytes]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    way: str,
) -> None:
    """Either swap keeps the files, folders and symlinks of ``--out`` the report does not own: the same
    content, the same inode for files (hard links), folder modes kept, ``--out``'s mode kept. The exchange
    replaces ``--out``'s folder (a new inode); the fallback (forced through the seam: no ``renameat2``, or
    the exchange refused with EINVAL / EXDEV) renames entries inside it (the same inode)."""
    out = tmp_path / "out"
    write_report(study / "runs", study / "qrels.tsv", out, title="report A", figures=False)
    before = _not_owned(out, tmp_path / "outside.txt")
    out_ino = out.stat().st_ino
    renames: list[tuple[Path, Path]] = []
    real_rename = atomic._rename
    monkeypatch.setattr(atomic, "_rename", lambda a, b: (renames.append((a, b)), real_rename(a, b)))
    if way == "no renameat2":
        monkeypatch.setattr(atomic, "_renameat2", lambda: None)
    elif way != "exchange":
        monkeypatch.setattr(atomic, "_exchange", _fail_einval if way == "EINVAL" else _fail_exdev)
    write_report(study / "runs", study / "qrels-b.tsv", out, title="report B", figures=False)
    now = snapshot(out)
    mine = {"notes.txt": b"mine\n", "runs-extra/sub/x.trec": b"q 0 d 1 1.0 t\n", "link": b"mine\n"}
    assert now == {**versions["B"], **mine}
    assert (out / "notes.txt").stat().st_ino == before["ino"] == (tmp_path / "outside.txt").stat().st_ino
    assert (out / "notes.txt").stat().st_nlink == 2  # the build's extra link is gone with the old folder
    assert (out / "runs-extra" / "sub" / "x.trec").stat().st_ino == before["x"]
    assert os.readlink(out / "link") == "notes.txt"
    assert (out / "empty").is_dir() and list((out / "empty").iterdir()) == []
    assert stat.S_IMODE((out / "runs-extra" / "sub").stat().st_mode) == 0o700
    assert stat.S_IMODE(out.stat().st_mode) == 0o750
    if way == "exchange":
        assert out.stat().st_ino != out_ino and renames == []
    else:
        assert out.stat().st_ino == out_ino and len(renames) == RENAMES
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "outside.txt"]


def _build_in(out: Path) -> None:
    with out_lock(out), atomic.built_beside(out, ["report.md"]) as build:
        (build / "report.md").write_text("new\n")


def test_out_as_a_symlink_or_as_dot_falls_back_and_keeps_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--out`` a symlink: the link stays a link and its target's entries are swapped (the exchange would
    replace the link itself); ``--out .``: the build lies inside it, so the fallback swap runs (the exchange's
    mirror would copy the build into itself)."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "report.md").write_text("old\n")
    (real / "keep.txt").write_text("k\n")
    (tmp_path / "link").symlink_to("real")
    _build_in(tmp_path / "link")
    assert (tmp_path / "link").is_symlink() and os.readlink(tmp_path / "link") == "real"
    assert snapshot(real) == {"keep.txt": b"k\n", "report.md": b"new\n"}
    monkeypatch.chdir(real)
    ino = real.stat().st_ino
    _build_in(Path("."))
    assert snapshot(real) == {"keep.txt": b"k\n", "report.md": b"new\n"} and real.stat().st_ino == ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]
