"""Run ``analysis report`` with a seam in the swap: the Nth step of the swap is preceded (or
followed) by an action, as the reviewer's ``strace -e inject`` did it. The steps counted: each rename of
``analysis.core.atomic._rename`` (the fallback swap, one entry at a time), and the exchange's journal write,
exchange and removal of the old folder (``_write_journal``, ``_exchange``, ``_discard_old``). The action: a
real signal sent to this process (``SIGINT``, ``SIGTERM``, ``SIGKILL``), a failed step (``oserror``), or a
pause until a file appears (``pause``: writes ``<dir>/paused``, waits for ``<dir>/go``; two processes at
once); N 0: no action.

    python seam.py N ACTION before|after DIR report --runs ... (the analysis command line)

or the same in a process forked from a server that has imported the analysis code (:func:`serve`;
``tests/worst_inputs/test_swap.py`` starts one per module). With ``SEAM_NO_EXCHANGE=1`` in the environment
the exchange is unavailable (no ``renameat2``), so the fallback swap runs. ``SEAM_CODE_RECORD`` (JSON) is
the analysis code record the test process computed for the same code
(``analysis.reporting.codeinfo.code_record``): taken as this process's, since computing it again costs
more than the whole report on the test's study, and the swap under test comes after it (the server
computes its own once before it forks, :func:`_warm`).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import analysis.core.atomic as atomic
import analysis.reporting.codeinfo as codeinfo
from analysis.cli import cli


def main(argv: list[str]) -> None:
    n, action, when, folder = int(argv[0]), argv[1], argv[2], Path(argv[3])
    count = [0]

    def act() -> None:
        if action == "oserror":
            raise OSError(errno.EIO, "Input/output error (injected)")
        if action == "pause":
            (folder / "paused").write_text(str(os.getpid()))
            while not (folder / "go").exists():
                time.sleep(0.02)
            return
        os.kill(os.getpid(), getattr(signal, action))

    def counted(real: Callable[..., Any]) -> Callable[..., Any]:
        def seam(*args: Any) -> Any:
            count[0] += 1
            if count[0] == n and when == "before":
                act()
            result = real(*args)
            if count[0] == n and when == "after":
                act()
            return result

        return seam

    for name in ("_rename", "_write_journal", "_exchange", "_discard_old"):
        setattr(atomic, name, counted(getattr(atomic, name)))
    if os.environ.get("SEAM_NO_EXCHANGE") == "1":
        atomic._renameat2 = lambda: None  # type: ignore[assignment]
    if record := os.environ.get("SEAM_CODE_RECORD"):  # read by the report through code_record_soon
        codeinfo.code_record = lambda root=None: json.loads(record)  # type: ignore[assignment]
    try:
        cli(argv[4:], prog_name="analysis")
    finally:
        print(f"renames {count[0]}", file=sys.stderr)


def _child(request: dict[str, Any]) -> None:
    """In the forked process: its own stdin (empty), stdout and stderr (files), environment and arguments;
    it ends as ``python seam.py ...`` would (the exit status of the command, 1 and a traceback for an
    exception, killed by a signal it sends itself)."""
    code = 1
    try:
        os.environ.update(request["env"])
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        try:
            main(request["argv"])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, timeout: float | None) -> int | None:
    """The child's exit status as ``Popen.returncode`` gives it (-N: killed by signal N); None while it runs
    (``timeout`` 0) or when it still runs after ``timeout`` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG if deadline is not None else 0)
        if done:
            return os.waitstatus_to_exitcode(status)
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def _warm() -> None:
    """What every report would do again in each forked process, done once before the first fork: the
    modules the report imports on first use (the fast run reader's pyarrow, the pytrec_eval check) and the
    code record of this code (cached per process, as :func:`codeinfo.code_record` says: 0.6 s each time,
    2026-12-06); then the objects out of the garbage collector's view (``gc.freeze``), as
    ``tests/support/pyforks.py`` does."""
    import gc
    import importlib

    for name in ("analysis.inputs.trec_fast", "pytrec_eval"):
        importlib.import_module(name)
    codeinfo.code_record()
    gc.collect()
    gc.freeze()


def serve() -> None:
    """``python seam.py --serve``: a process that has imported the analysis code once forks each seam process
    from it (a fresh interpreter would import numpy and the analysis code again each time). Requests, a
    line of JSON each on stdin: ``{"argv", "env", "stdout", "stderr"}`` answers the child's pid; ``{"wait":
    pid, "timeout": seconds or null}`` its exit status, or null while it still runs."""
    _warm()
    for line in sys.stdin:
        request = json.loads(line)
        if "wait" in request:
            answer = _wait(request["wait"], request["timeout"])
        else:
            answer = os.fork()
            if answer == 0:
                _child(request)
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        main(sys.argv[1:])
