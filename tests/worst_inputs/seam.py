"""Run ``analysis report`` with a seam in the swap: the Nth rename of
``analysis.atomic._rename`` is preceded (or followed) by an action, as the reviewer's ``strace -e inject``
did it: a real signal sent to this process (``SIGINT``, ``SIGTERM``, ``SIGKILL``), a failed rename
(``oserror``), or a pause until a file appears (``pause``: writes ``<dir>/paused``, waits for
``<dir>/go``; two processes at once).

    python seam.py N ACTION before|after DIR report --runs ... (the analysis command line)
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import time
from pathlib import Path

import analysis.atomic as atomic
from analysis.cli import cli


def main() -> None:
    n, action, when, folder = int(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
    real = atomic._rename
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

    def seam(src: Path, dst: Path) -> None:
        count[0] += 1
        if count[0] == n and when == "before":
            act()
        real(src, dst)
        if count[0] == n and when == "after":
            act()

    atomic._rename = seam  # type: ignore[assignment]
    try:
        cli(sys.argv[5:], prog_name="analysis")
    finally:
        print(f"renames {count[0]}", file=sys.stderr)


if __name__ == "__main__":
    main()
