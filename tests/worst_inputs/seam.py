"""Run ``analysis report`` with a seam in the swap: the Nth step of the swap is preceded (or
followed) by an action, as the reviewer's ``strace -e inject`` did it. The steps counted: each rename of
``analysis.core.atomic._rename`` (the fallback swap, one entry at a time), and the exchange's journal write,
exchange and removal of the old folder (``_write_journal``, ``_exchange``, ``_discard_old``). The action: a
real signal sent to this process (``SIGINT``, ``SIGTERM``, ``SIGKILL``), a failed step (``oserror``), or a
pause until a file appears (``pause``: writes ``<dir>/paused``, waits for ``<dir>/go``; two processes at
once); N 0: no action.

    python seam.py N ACTION before|after DIR report --runs ... (the analysis command line)

With ``SEAM_NO_EXCHANGE=1`` in the environment the exchange is unavailable (no ``renameat2``), so the
fallback swap runs. ``SEAM_CODE_RECORD`` (JSON) is the analysis code record the test process computed for the
same code (``analysis.reporting.codeinfo.code_record``): taken as this process's, since computing it again
costs more than the whole report on the test's study, and the swap under test comes after it.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import analysis.core.atomic as atomic
import analysis.reporting.report as report
from analysis.cli import cli


def main() -> None:
    n, action, when, folder = int(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
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
    if record := os.environ.get("SEAM_CODE_RECORD"):
        report.code_record = lambda root=None: json.loads(record)  # type: ignore[assignment]
    try:
        cli(sys.argv[5:], prog_name="analysis")
    finally:
        print(f"renames {count[0]}", file=sys.stderr)


if __name__ == "__main__":
    main()
