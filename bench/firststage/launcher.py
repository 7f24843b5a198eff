"""Start a child that stops itself when its parent dies (no orphaned Typesense).

``python -m bench.firststage.launcher PARENT_PID PROGRAM ARGS...`` asks Linux to send SIGKILL to this
process when its parent dies (``prctl(PR_SET_PDEATHSIG)``, see prctl(2)), checks that the parent is
still ``PARENT_PID`` (it may have died before the request took effect), then replaces itself with
``PROGRAM`` by ``execv``. The death signal survives ``execv``, so the Typesense server is killed when the
harness that started it is killed, even by SIGKILL, which no handler can catch.

SIGKILL, not SIGTERM: a harness that is gone cannot wait for a graceful stop, and Typesense 0.24.1 can
swallow a SIGTERM that comes early in its start-up (seen under load: a server whose harness was SIGKILLed
as it started caught the SIGTERM, logged nothing and slept on a lock for minutes, PPID 1). The stop of a
living harness is still SIGTERM first where the data directory is kept (``bench.firststage.server``).

A separate process instead of ``subprocess.Popen(preexec_fn=...)``: ``preexec_fn`` is unsafe once the
parent has threads (torch, tokenizers, progress reporters). prctl(2) notes that the signal fires when the
parent *thread* exits, so the server handle must be created on a thread that lives as long as it is
needed (the main thread, in every command).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
EXIT_PARENT_GONE = 75


def set_parent_death_signal(sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent (thread) exits. Linux only."""
    if not sys.platform.startswith("linux"):
        raise OSError(f"parent-death signal needs Linux (prctl), not {sys.platform}")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG) failed: {os.strerror(err)}")


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: python -m bench.firststage.launcher PARENT_PID PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    parent = int(argv[0])
    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect: nobody to serve
        print(f"launcher: parent {parent} is gone; not starting {argv[1]}", file=sys.stderr)
        return EXIT_PARENT_GONE
    os.execv(argv[1], argv[1:])
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
